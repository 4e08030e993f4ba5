"""Loaders of the shared sets given files a user might have edited: named errors, no silent
values (a defect hunt over the data set loaders)."""
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import require_data
from crowd_keras import CrowdDataError
from crowd_keras.datasets import (LABELME_CLASSES, load_labelme, load_music, load_pico,
                                  load_truth_inference, load_truth_inference_features,
                                  load_wrench)


def _linked(src, dst, skip=()):
    for f in src.iterdir():
        if f.name not in skip and f.name != "README.md":
            (dst / f.name).symlink_to(f)
    return dst


@pytest.fixture
def music_gold(tmp_path):
    """A music folder whose gold file is a fresh copy the test edits (the rest linked)."""
    src = require_data("music")
    _linked(src, tmp_path, skip=("music_genre_gold.csv",))
    return pd.read_csv(src / "music_genre_gold.csv"), tmp_path


@pytest.mark.parametrize("value, shown", [("x", "'x'"), ("", "nan")])
def test_music_features_that_are_not_numbers_are_named(music_gold, value, shown):
    gold, folder = music_gold
    gold["feature2"] = gold["feature2"].astype(object)
    gold.loc[5, "feature2"] = value
    gold.to_csv(folder / "music_genre_gold.csv", index=False)
    # was a bare ValueError ('x') or a NaN feature passed on to training (empty cell)
    with pytest.raises(CrowdDataError, match=rf"music_genre_gold.csv, row 5, column 'feature2': "
                                             rf"{shown} is not a finite number"):
        load_music(folder)


def test_music_file_without_a_column_is_named(music_gold):
    gold, folder = music_gold
    gold.drop(columns=["class"]).to_csv(folder / "music_genre_gold.csv", index=False)
    with pytest.raises(CrowdDataError, match=r"music_genre_gold.csv: no column\(s\) \['class'\]"):
        load_music(folder)   # was KeyError: 'class'


def test_music_repeated_gold_song_names_the_gold_file(music_gold):
    gold, folder = music_gold
    pd.concat([gold, gold.iloc[:1]]).to_csv(folder / "music_genre_gold.csv", index=False)
    with pytest.raises(CrowdDataError, match=r"music_genre_gold.csv, row 700: song '.*' repeats "
                                             r"row 0"):
        load_music(folder)   # was blamed on music_genre_annotations.csv


def test_music_features_as_documented(music_gold):
    gold, folder = music_gold
    gold.to_csv(folder / "music_genre_gold.csv", index=False)
    d = load_music(folder)
    assert d.x_train.shape == (700, 124) and d.x_test.shape == (300, 124)
    assert d.x_train.dtype == np.float32
    np.testing.assert_allclose(d.x_train[:, 0], gold["feature0"].to_numpy(), rtol=1e-6)


def _tiny_pico(folder, crowd_test, authors=()):
    docs = [{"docid": "1", "text": "adults with asthma"},
            {"docid": "2", "text": "children aged five"}]
    # every file holds a record: an empty one is refused as truncated
    lines = {"docs.jsonl": docs, "crowd_test.jsonl": crowd_test, "crowd_dev.jsonl": [],
             "gold_acl17_even.jsonl": [{"docid": "1", "spans": []}],
             "authors_aggregates_acl17.jsonl": list(authors) or [
                 {"docid": "1", "HMMCrowd": [], "DawidSkene": [], "MajorityVote": []}]}
    for name, rows in lines.items():
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_pico_files_with_a_byte_order_mark_are_read(tmp_path):
    _tiny_pico(tmp_path, [{"docid": "1", "spans": {"w1": [[0, 6]]}}])
    for name in ("docs.jsonl", "crowd_test.jsonl"):
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    d = load_pico(tmp_path, splits=("test",))   # was "Unexpected UTF-8 BOM" at line 1
    assert list(d.sequences.doc_ids) == ["1"] and list(d.split) == ["test"]


def test_pico_repeated_authors_aggregate_is_refused(tmp_path):
    row = {"docid": "1", "HMMCrowd": [[0, 6]], "DawidSkene": [], "MajorityVote": []}
    _tiny_pico(tmp_path, [{"docid": "1", "spans": {}}],
               authors=[row, dict(row, HMMCrowd=[])])
    with pytest.raises(CrowdDataError, match=r"authors_aggregates_acl17.jsonl: docid '1' has two "
                                             r"records"):
        load_pico(tmp_path, splits=("test",))   # the second silently replaced the first
    _tiny_pico(tmp_path, [{"docid": "1", "spans": {}}], authors=[row])
    assert load_pico(tmp_path, splits=("test",)).authors["HMMCrowd"] == {"1": [[0, 6]]}


def test_pico_crowd_record_without_a_text_names_both_files(tmp_path):
    _tiny_pico(tmp_path, [{"docid": "9", "spans": {}}])
    with pytest.raises(CrowdDataError, match=r"\S+crowd_test.jsonl: docid '9' has no text in "
                                             r"\S+docs.jsonl"):
        load_pico(tmp_path, splits=("test",))


@pytest.fixture
def labelme(tmp_path):
    src = require_data("labelme")
    return src, _linked(src, tmp_path, skip=("classes.txt", "LabelMe_Z_train.txt",
                                             "LabelMe_VGG_avg_valid.npy"))


def _labelme_files(src, folder, classes=None, z_prefix=b"", valid=None):
    (folder / "classes.txt").write_bytes(classes if classes is not None
                                         else (src / "classes.txt").read_bytes())
    (folder / "LabelMe_Z_train.txt").write_bytes(z_prefix
                                                 + (src / "LabelMe_Z_train.txt").read_bytes())
    np.save(folder / "LabelMe_VGG_avg_valid.npy",
            valid if valid is not None else np.load(src / "LabelMe_VGG_avg_valid.npy"))


def test_labelme_files_with_a_byte_order_mark_are_read(labelme):
    src, folder = labelme
    bom = b"\xef\xbb\xbf"
    _labelme_files(src, folder, classes=bom + (src / "classes.txt").read_bytes(), z_prefix=bom)
    d = load_labelme(folder)
    # the mark stuck to the first class name ('\ufeffhighway') and failed the codes file
    assert d.classes == list(LABELME_CLASSES)
    np.testing.assert_array_equal(d.y_train, np.loadtxt(src / "LabelMe_Z_train.txt",
                                                        dtype=np.int64))


def test_labelme_features_of_another_width_or_shape_are_refused(labelme):
    src, folder = labelme
    valid = np.load(src / "LabelMe_VGG_avg_valid.npy")
    _labelme_files(src, folder, valid=valid[:, :100])
    with pytest.raises(CrowdDataError, match=r"LabelMe_VGG_avg_valid.npy: 100 features per item, "
                                             r"but \S+LabelMe_VGG_avg_train.npy has 512"):
        load_labelme(folder)
    _labelme_files(src, folder, valid=valid.reshape(500, 16, 32))
    with pytest.raises(CrowdDataError, match=r"valid.npy: features of shape \(500, 16, 32\); "
                                             r"expected a 2-d array"):
        load_labelme(folder)


def test_labelme_features_not_finite_are_refused_by_row_and_feature(labelme):
    src, folder = labelme
    valid = np.load(src / "LabelMe_VGG_avg_valid.npy").copy()
    valid[7, 3] = np.nan
    _labelme_files(src, folder, valid=valid)
    with pytest.raises(CrowdDataError, match=r"LabelMe_VGG_avg_valid.npy: row 7, feature 3 is "
                                             r"nan, not a finite number"):
        load_labelme(folder)


def test_labelme_class_named_twice_names_classes_txt(labelme):
    src, folder = labelme
    _labelme_files(src, folder, classes=b"highway\n" * 8)
    with pytest.raises(CrowdDataError, match=r"classes.txt: class 'highway' is named twice"):
        load_labelme(folder)   # was blamed on answers.txt


@pytest.mark.parametrize("classes, words", [
    (b"", r"classes.txt: no class names \(one per line"),
    # the first four of the eight: the codes 4..7 of the codes file are named with the list
    (b"highway\ninsidecity\ntallbuilding\nstreet\n",
     r"LabelMe_Z_train.txt, row \d+: class code [4-7] is not one of 0..3 \(4 classes in "
     r".*classes.txt\)"),
])
def test_labelme_empty_or_truncated_class_list_names_classes_txt(labelme, classes, words):
    """An empty classes.txt (a partial copy) was read as no classes and blamed on
    LabelMe_Z_train.txt ('class code 3 is not one of 0..-1 (0 classes)')."""
    src, folder = labelme
    _labelme_files(src, folder, classes=classes)
    with pytest.raises(CrowdDataError, match=words):
        load_labelme(folder)


def test_truth_inference_features_that_are_not_finite_are_named(tmp_path):
    features = np.ones((3, 4))
    features[2, 1] = np.nan
    np.savez(tmp_path / "vgg16_features.npz", ids=np.array([5, 6, 7]), features=features)
    np.testing.assert_array_equal(load_truth_inference_features(tmp_path, [6, 5]),
                                  np.ones((2, 4), np.float32))   # only the items asked for
    with pytest.raises(CrowdDataError, match=r"vgg16_features.npz: feature 1 of id 7 is nan, "
                                             r"not a finite number"):
        load_truth_inference_features(tmp_path, [5, 7])   # was returned as NaN


@pytest.mark.parametrize("answers, truth, match", [
    # was TypeError: '<' not supported between instances of 'int' and 'str'
    ("question,worker,answer\nq1,a,0\nq2,b,1\n", "question,truth\n1,0\n2,1\n",
     r"truth.csv: its questions \(such as 1, .*\) and those of \S+answer.csv \(such as 'q1', "
     r".*\) are not the same kind of id"),
    # was "unknown item id nan", naming no file
    ("question,worker,answer\n1,a,0\n", "question,truth\n1,0\n,1\n",
     r"truth.csv, row 1: no question \(truth 1\)"),
    # was TypeError from sorting 'q2' with the missing question's NaN
    ("question,worker,answer\n,a,0\nq2,a,1\n", None,
     r"answer.csv: missing value .* column 'question' at row 0"),
], ids=["text-and-number-ids", "truth-without-question", "text-ids-and-a-missing-one"])
def test_truth_inference_question_ids_that_do_not_fit_are_named(tmp_path, answers, truth,
                                                                match):
    (tmp_path / "answer.csv").write_text(answers)
    if truth is not None:
        (tmp_path / "truth.csv").write_text(truth)
    with pytest.raises(CrowdDataError, match=match):
        load_truth_inference(tmp_path)


def test_labelme_codes_file_with_two_columns_or_one_row(labelme):
    src, folder = labelme
    _labelme_files(src, folder)
    z = np.loadtxt(src / "LabelMe_Z_train.txt", dtype=np.int64)
    np.savetxt(folder / "LabelMe_Z_train.txt", np.c_[z, z], fmt="%d")
    with pytest.raises(CrowdDataError, match=r"LabelMe_Z_train.txt: 2 columns; one class code "
                                             r"per row"):
        load_labelme(folder)   # y_train was (1000, 2)
    np.savetxt(folder / "LabelMe_Z_train.txt", z, fmt="%d")
    for name in ("LabelMe_Z_test.txt", "LabelMe_VGG_avg_test.npy"):
        (folder / name).unlink()
    np.savetxt(folder / "LabelMe_Z_test.txt", z[:1], fmt="%d")
    np.save(folder / "LabelMe_VGG_avg_test.npy", np.load(src / "LabelMe_VGG_avg_test.npy")[:1])
    d = load_labelme(folder)   # a one-row split was TypeError: len() of unsized object
    assert d.y_test.tolist() == [z[0]] and d.x_test.shape == (1, 512)


def test_a_split_name_that_is_not_one_says_which_are(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)   # no folder named like the set
    with pytest.raises(ValueError, match=r"unknown WRENCH split 'dev'; splits are \('train', "
                                         r"'valid', 'test'\)"):
        load_wrench("youtube", "dev", download=False)   # was "has no file(s) ['dev.json']"
    with pytest.raises(TypeError, match=r"for one split write splits=\('dev',\)"):
        load_pico(tmp_path, splits="dev")   # was "unknown PICO split(s) ['d', 'e', 'v']"


@pytest.mark.parametrize("load, words", [
    (lambda: load_truth_inference(Path("dog")), r"no answer.csv in dog \(no such folder; the set "
                                                r"'dog' is named by a string, 'dog', not a Path\)"),
    (lambda: load_wrench(Path("youtube")), r"youtube/train.json \(no such folder; the set "
                                           r"'youtube' is named by a string"),
    (lambda: load_truth_inference_features(Path("bluebirds"), [1]),
     r"bluebirds/vgg16_features.npz \(no such folder; the set 'bluebirds' is named by a string"),
])
def test_a_set_name_given_as_a_path_is_told_to_be_a_string(load, words, tmp_path, monkeypatch):
    """It read "'dog' is neither a folder nor one of the sets [..., 'dog', ...]"."""
    monkeypatch.chdir(tmp_path)   # no folder of that name here
    with pytest.raises(CrowdDataError, match=words):
        load()


def test_a_folder_given_with_a_tilde_is_read_from_home(tmp_path, monkeypatch):
    """'~/data/...' was no folder to the loaders ("no labelme data at ~/data/labelme"),
    though CROWD_KERAS_DATA and pandas read a '~' as the home folder."""
    src = require_data()
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "data").symlink_to(src)
    assert load_labelme("~/data/labelme", download=False).x_train.shape == (1000, 512)
    ann, truth = load_truth_inference("~/data/truth_inference/dog")
    assert ann.n_items == len(truth) == 807
    assert load_wrench("~/data/wrench/youtube", "valid").L.shape == (120, 10)
    assert load_pico("~/data", splits=("acl17-test",), download=False).split.shape == (191,)


def test_labelme_fractional_or_commented_codes_are_refused(labelme):
    src, folder = labelme
    _labelme_files(src, folder)
    z = (src / "LabelMe_Z_train.txt").read_text().splitlines()
    (folder / "LabelMe_Z_train.txt").write_text("\n".join(z[:3] + ["4.9"] + z[4:]) + "\n")
    with pytest.raises(CrowdDataError, match=r"LabelMe_Z_train.txt, line 4: 4.9 is not an "
                                             r"integer code"):
        load_labelme(folder)   # was read as 4 (numpy's hidden DeprecationWarning)
    (folder / "LabelMe_Z_train.txt").write_text("\n".join(z[:3] + ["# 3"] + z[4:]) + "\n")
    with pytest.raises(CrowdDataError, match=r"LabelMe_Z_train.txt: not a table of integers"):
        load_labelme(folder)   # the commented row was skipped: every later item shifted


def test_truth_inference_text_answer_is_named_at_its_own_row(tmp_path):
    (tmp_path / "answer.csv").write_text("question,worker,answer\n1,a,0\n1,b,yes\n2,a,1\n")
    (tmp_path / "truth.csv").write_text("question,truth\n1,0\n2,1\n")
    with pytest.raises(CrowdDataError, match=r"answer.csv, row 1: answer 'yes' of question 1 is "
                                             r"not a class code"):
        load_truth_inference(tmp_path)   # blamed row 0's '0' (the column read as text)


def test_music_gold_song_without_an_id_names_the_gold_file(music_gold):
    gold, folder = music_gold
    gold["id"] = gold["id"].astype(object)
    gold.loc[1, "id"] = None
    gold.to_csv(folder / "music_genre_gold.csv", index=False)
    with pytest.raises(CrowdDataError, match=r"music_genre_gold.csv, row 1: no song id"):
        load_music(folder)   # was blamed on music_genre_annotations.csv


def test_pico_bad_crowd_span_names_the_crowd_file(tmp_path):
    _tiny_pico(tmp_path, [{"docid": "1", "spans": {"w1": [[6, 0]]}}])
    with pytest.raises(CrowdDataError, match=r"crowd_test.jsonl: span row \('1', 'w1', 0\): end "
                                             r"before start"):
        load_pico(tmp_path, splits=("test",))   # named neither file nor line


def test_wrench_boolean_beside_integer_codes_is_refused(tmp_path):
    (tmp_path / "label.json").write_text(json.dumps({"0": "ham", "1": "spam"}))
    (tmp_path / "train.json").write_text(json.dumps({
        "0": {"label": 1, "weak_labels": [False, 1]}, "1": {"label": 0, "weak_labels": [1, -1]}}))
    with pytest.raises(CrowdDataError, match=r"record '0': weak_labels \[False, 1\] is not a list "
                                             r"of integer codes"):
        load_wrench(tmp_path, "train")   # was read as [0, 1]
    (tmp_path / "train.json").write_text(json.dumps({
        "0": {"label": True, "weak_labels": [0, 1]}, "1": {"label": 0, "weak_labels": [1, -1]}}))
    with pytest.raises(CrowdDataError, match=r"record '0': label True is not an integer code"):
        load_wrench(tmp_path, "train")


def test_download_switch_is_checked_for_a_folder_too():
    folder = require_data("truth_inference", "dog")
    with pytest.raises(ValueError, match="download must be True or False"):
        load_truth_inference(folder, download="no")
