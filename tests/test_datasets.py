"""The crowd simulator and the loaders of the shared data sets."""
import numpy as np
import pytest

from conftest import require_data
from crowd_keras import CrowdDataError
from crowd_keras.datasets import (load_labelme, load_music, load_truth_inference,
                                  load_truth_inference_features, load_wrench, simulate_crowd)


def test_simulator_is_deterministic_and_seed_sensitive():
    a = simulate_crowd(n_items=300, common_noise="asymmetric", seed=5)
    b = simulate_crowd(n_items=300, common_noise="asymmetric", seed=5)
    c = simulate_crowd(n_items=300, common_noise="asymmetric", seed=6)
    assert a.annotations == b.annotations
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.omega, b.omega)
    assert a.annotations != c.annotations


def test_simulator_shapes_and_per_item_redundancy():
    sim = simulate_crowd(n_items=500, n_classes=5, n_annotators=20, annotations_per_item=4,
                         n_features=7, seed=0)
    assert sim.x.shape == (500, 7) and sim.x.dtype == np.float32
    assert sim.y.shape == (500,) and set(np.unique(sim.y)) <= set(range(5))
    assert (sim.annotations.annotations_per_item() == 4).all()
    assert sim.confusion_matrices.shape == (20, 5, 5)
    np.testing.assert_allclose(sim.confusion_matrices.sum(axis=2), 1.0)


def test_annotators_label_at_their_accuracy():
    sim = simulate_crowd(n_items=6000, n_annotators=10, annotations_per_item=5,
                         annotator_accuracy=(0.4, 0.95), seed=1)
    true_acc = np.einsum("akk->ak", sim.confusion_matrices).mean(axis=1)
    np.testing.assert_allclose(sim.annotator_accuracy(), true_acc, atol=0.03)


@pytest.mark.parametrize("pattern", ["asymmetric", "symmetric"])
def test_common_noise_follows_the_conal_protocol(pattern):
    sim = simulate_crowd(n_items=4000, n_classes=6, n_annotators=30, common_noise=pattern,
                         common_strength=0.7, common_proportion=0.4, seed=2)
    common = sim.common_confusion
    np.testing.assert_allclose(np.diag(common), 0.3)  # strength = off-diagonal mass per row
    np.testing.assert_allclose(common.sum(axis=1), 1.0)
    assert sim.omega.mean() == pytest.approx(0.4, abs=1e-6)
    assert sim.used_common.mean() == pytest.approx(0.4, abs=0.03)
    assert sim.omega.std() > 0.05  # ω varies with the (instance, annotator) pair
    if pattern == "symmetric":
        off = common - np.diag(np.diag(common))
        np.testing.assert_allclose(off, off.T)  # pairs flip into each other
    # annotations drawn from the common matrix follow it
    ann = sim.annotations
    used = sim.used_common
    y = sim.y[ann.items[used]]
    counts = np.zeros((6, 6))
    np.add.at(counts, (y, ann.labels[used]), 1)
    np.testing.assert_allclose(counts / counts.sum(axis=1, keepdims=True), common, atol=0.06)


def test_zero_proportion_means_no_common_noise():
    sim = simulate_crowd(n_items=200, common_noise="asymmetric", common_proportion=0.0, seed=0)
    assert not sim.used_common.any()


def test_groups_protocol():
    sim = simulate_crowd(n_items=2000, n_annotators=400, annotations_per_item=5, groups="default",
                         seed=3)
    assert sim.group_names == ("experts", "non-experts", "spammers")
    share = np.bincount(sim.annotator_groups, minlength=3) / 400
    np.testing.assert_allclose(share, [0.25, 0.55, 0.20], atol=0.06)
    np.testing.assert_allclose(sim.group_confusions[2], 0.25)  # spammers: uniform
    np.testing.assert_array_equal(sim.confusion_matrices,
                                  sim.group_confusions[sim.annotator_groups])
    acc = sim.annotator_accuracy()
    assert acc[sim.annotator_groups == 0].mean() > acc[sim.annotator_groups == 1].mean() > \
        acc[sim.annotator_groups == 2].mean()


def test_sparse_crowd_with_many_annotators_stays_sparse():
    sim = simulate_crowd(n_items=5000, n_annotators=10000, annotations_per_item=3, seed=0)
    assert sim.annotations.n_annotators == 10000
    assert (sim.annotations.annotations_per_item() == 3).all()


def test_simulator_bad_arguments():
    with pytest.raises(CrowdDataError, match="annotations_per_item must be in 1..5"):
        simulate_crowd(n_annotators=5, annotations_per_item=6)
    with pytest.raises(CrowdDataError, match="n_classes"):
        simulate_crowd(n_classes=1)
    # outside [0, 1] the confusion rows held negative "probabilities" and sampling went on
    for accuracy in (1.5, -0.2, (0.2, 0.5, 0.9)):
        with pytest.raises(CrowdDataError, match="annotator_accuracy must be"):
            simulate_crowd(n_items=20, annotator_accuracy=accuracy)
    with pytest.raises(CrowdDataError, match="groups must be None, 'default'"):
        simulate_crowd(n_items=20, groups="defualt")
    with pytest.raises(CrowdDataError, match="probabilities >= 0"):
        simulate_crowd(n_items=20, groups=[{"probability": 1, "accuracy": 1.2}])
    with pytest.raises(ValueError, match="n_features must be an integer >= 1"):
        simulate_crowd(n_items=20, n_features=-1)


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(n_items=-3), ValueError, "n_items must be an integer >= 1"),
    (dict(per_item=0), ValueError, "per_item must be an integer >= 1"),   # was an empty crowd
    (dict(n_workers=0, per_item=0), ValueError, "n_workers must be an integer >= 1"),
    (dict(types={"good": 0}), CrowdDataError, "types must give shares >= 0, not all 0"),
    (dict(duplicate_rate=2), ValueError, r"duplicate_rate must be a finite number in \[0, 1\]"),
    (dict(cliques=(3, 3, 0.5, 0.5)), CrowdDataError, "cliques of 3 × 3 workers exceed"),
])
def test_hard_crowd_bad_arguments(kwargs, error, match):
    from crowd_keras.datasets import simulate_hard_crowd

    args = {**dict(n_items=10, prior=(0.5, 0.5), n_workers=5, per_item=2), **kwargs}
    with pytest.raises(error, match=match):
        simulate_hard_crowd(**args)


def test_failure_kind_bad_arguments():
    from crowd_keras.datasets import simulate_failure_kind

    with pytest.raises(CrowdDataError, match="unknown failure kind 'nope'; known: "):
        simulate_failure_kind("nope")
    for scale in (-1, 0, float("nan")):          # were silently 100 items
        with pytest.raises(ValueError, match="scale must be"):
            simulate_failure_kind("dense_biased", scale=scale)


def test_load_labelme():
    d = load_labelme(require_data("labelme"))
    assert d.x_train.shape == (1000, 512) and d.x_valid.shape == (500, 512)
    assert d.x_test.shape == (1188, 512) and d.y_test.shape == (1188,)
    assert d.annotations.n_annotations == 2547 and d.annotations.n_annotators == 59
    assert d.classes[0] == "highway" and len(d.classes) == 8


def test_load_music():
    d = load_music(require_data("music"))
    assert d.annotations.n_annotations == 2945 and d.annotations.n_items == 700
    assert d.annotations.n_annotators == 44
    assert d.x_train.shape == (700, 124) and d.x_test.shape == (300, 124)
    assert len(d.classes) == 10 and set(np.unique(d.y_train)) == set(range(10))


def test_load_truth_inference_and_features():
    folder = require_data("truth_inference", "bluebirds")
    ann, truth = load_truth_inference(folder)
    assert ann.n_items == 108 and ann.n_annotations == 4212 and (truth >= 0).all()
    feats = load_truth_inference_features(folder, ann.item_ids)
    assert feats.shape == (108, 4096)
    with pytest.raises(CrowdDataError, match="no answer.csv"):
        load_truth_inference(folder.parent)


def test_load_wrench():
    d = load_wrench(require_data("wrench", "youtube"), "train")
    assert d.L.shape == (1686, 10) and d.L.min() == -1 and d.classes == ["HAM", "SPAM"]
    assert len(d.texts) == 1686 and set(np.unique(d.y)) == {0, 1}


def test_adult_content_repeated_answers_are_refused_or_counted():
    """The README's figures: 92,721 answers of 11,040 pages by 825 workers, 2,922 of them a
    worker's repeated answer to a page, gold for 333 pages."""
    folder = require_data("truth_inference", "adult_content")
    with pytest.raises(CrowdDataError, match="2922 duplicate .* duplicates='last'"):
        load_truth_inference(folder)
    ann, truth = load_truth_inference(folder, duplicates="last")
    assert (ann.n_items, ann.n_annotators, ann.n_classes) == (11040, 825, 4)
    assert ann.n_duplicates == 2922 and ann.n_annotations == 92721 - 2922
    assert (truth >= 0).sum() == 333


@pytest.mark.parametrize("truth_csv,match", [
    ("question,truth\n1,0\n1,1\n2,1\n", r"question 1 has truth at row 0 and row 1"),
    ("question,truth\n1,\n2,1\n", r"row 0: truth nan of question 1 is not a class code"),
    ("question,truth\n1,0.5\n2,1\n", r"row 0: truth 0.5 of question 1"),
    ("question,truth\n1,0\n2,-2\n", r"row 1: truth -2 of question 2"),
    ("question,label\n1,0\n", r"truth.csv: no column\(s\) \['truth'\]"),
])
def test_truth_inference_refuses_bad_truth_rows_naming_the_file(tmp_path, truth_csv, match):
    (tmp_path / "answer.csv").write_text("question,worker,answer\n1,a,0\n1,b,1\n2,a,1\n")
    (tmp_path / "truth.csv").write_text(truth_csv)
    with pytest.raises(CrowdDataError, match=match) as err:
        load_truth_inference(tmp_path)
    assert str(tmp_path / "truth.csv") in str(err.value)
    (tmp_path / "truth.csv").write_text("question,truth\n1,0\n2,-1\n")  # -1: unknown truth
    assert load_truth_inference(tmp_path)[1].tolist() == [0, -1]


@pytest.mark.parametrize("record,labels,match", [
    ({"label": 0, "weak_labels": [2, -1]}, None, r"record 'r0', function 0: weak_labels 2 is not"),
    ({"label": 0, "weak_labels": [1, -3]}, None, r"function 1: weak_labels -3"),
    ({"label": 7, "weak_labels": [1, -1]}, None, r"record 'r0': label 7 is not"),
    ({"label": 0.5, "weak_labels": [1, -1]}, None, r"label 0.5 is not"),       # was read as 0
    ({"label": 0, "weak_labels": ["1", -1]}, None,
     r"record 'r0': weak_labels \['1', -1\] is not a list of integer codes"),
    ({"label": [0, 1], "weak_labels": [1, -1]}, None,          # was read as label 0
     r"record 'r0': label \[0, 1\] is not an integer code"),
    ({"label": None, "weak_labels": [1, -1]}, None, r"record 'r0': label None is not"),
    ({"label": 0, "weak_labels": [1, -1]}, {"0": "a", "1": "a"}, r"label.json: class names "
                                                                  r"\['a', 'a'\] repeat"),
    ({"label": 0, "weak_labels": [1, -1]}, {"0": "a", "2": "c"}, r"label.json: must map"),
])
def test_wrench_refuses_codes_outside_the_classes(tmp_path, record, labels, match):
    import json

    (tmp_path / "train.json").write_text(json.dumps({"r0": record}))
    (tmp_path / "label.json").write_text(json.dumps(labels or {"0": "ham", "1": "spam"}))
    with pytest.raises(CrowdDataError, match=match):
        load_wrench(tmp_path)
    unlabelled = {"r0": {"label": -1, "weak_labels": [1.0, -1]}}
    (tmp_path / "train.json").write_text(json.dumps(unlabelled))
    (tmp_path / "label.json").write_text(json.dumps({"0": "ham", "1": "spam"}))
    d = load_wrench(tmp_path)   # integral floats are codes; -1: no gold
    assert d.L.tolist() == [[1, -1]] and d.L.dtype == np.int64 and d.y.tolist() == [-1]


def _linked(src, dst, skip=()):
    for f in src.iterdir():
        if f.name not in skip and f.name != "README.md":
            (dst / f.name).symlink_to(f)
    return dst


def test_labelme_files_of_other_lengths_or_codes_are_refused(tmp_path):
    src = require_data("labelme")
    rows = (src / "answers.txt").read_text().splitlines()
    _linked(src, tmp_path, skip=("answers.txt",))
    (tmp_path / "answers.txt").write_text("\n".join(rows[:-1]) + "\n")  # 999 rows: shifted
    with pytest.raises(CrowdDataError, match=r"answers.txt has 999 rows but .*"
                                             r"LabelMe_VGG_avg_train.npy has 1000"):
        load_labelme(tmp_path)
    (tmp_path / "answers.txt").write_text("\n".join(rows) + "\n")
    (tmp_path / "LabelMe_Z_valid.txt").unlink()
    (tmp_path / "LabelMe_Z_valid.txt").write_text("8\n" * 500)
    with pytest.raises(CrowdDataError, match=r"LabelMe_Z_valid.txt, row 0: class code 8 is not"):
        load_labelme(tmp_path)


def test_music_labels_outside_the_gold_genres_are_refused(tmp_path):
    src = require_data("music")
    _linked(src, tmp_path, skip=("music_genre_test.csv",))
    test = (src / "music_genre_test.csv").read_text().splitlines()
    (tmp_path / "music_genre_test.csv").write_text(
        "\n".join(test[:1] + [test[1].rsplit(",", 1)[0] + ",polka"] + test[2:]) + "\n")
    with pytest.raises(CrowdDataError, match=r"music_genre_test.csv, row 0: class 'polka'"):
        load_music(tmp_path)   # was an eleventh class


def test_music_repeated_labels_can_be_counted(tmp_path):
    src = require_data("music")
    _linked(src, tmp_path, skip=("music_genre_annotations.csv",))
    rows = (src / "music_genre_annotations.csv").read_text().splitlines()
    (tmp_path / "music_genre_annotations.csv").write_text("\n".join(rows + rows[1:3]) + "\n")
    with pytest.raises(CrowdDataError, match="2 duplicate .* duplicates='last'"):
        load_music(tmp_path)               # the advice named an argument the loader lacked
    d = load_music(tmp_path, duplicates="last")
    assert d.annotations.n_duplicates == 2 and d.annotations.n_annotations == 2945


def test_a_mistyped_set_name_lists_the_sets(tmp_path):
    with pytest.raises(CrowdDataError, match=r"'doggo' is neither a folder nor one of the sets "
                                             r"\['bluebirds'"):
        load_truth_inference("doggo")
    with pytest.raises(CrowdDataError, match=r"'youtub' is neither a folder .* \['youtube'"):
        load_wrench("youtub")
    np.savez(tmp_path / "vgg16_features.npz", ids=np.array([1, 1, 2]), features=np.ones((3, 4)))
    with pytest.raises(CrowdDataError, match="vgg16_features.npz: id 1 has two rows"):
        load_truth_inference_features(tmp_path, [1, 2])


@pytest.mark.parametrize("answer_csv,match", [
    ("question,worker,answer\n1,a,yes\n", r"answer.csv, row 0: answer 'yes' of question 1 is not a class code"),
    ("question,worker,answer\n1,a,0\n2,a,1,5\n", r"answer.csv: not a CSV table"),
    ("question,worker,answer\n", r"answer.csv: a header and no answers"),
])
def test_truth_inference_errors_in_answers_name_the_file(tmp_path, answer_csv, match):
    (tmp_path / "answer.csv").write_text(answer_csv)
    with pytest.raises(CrowdDataError, match=match):
        load_truth_inference(tmp_path)

