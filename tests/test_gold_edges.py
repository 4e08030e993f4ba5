"""Gold labels at their edges: every place they enter (fit(gold=...), --gold, the Snorkel
adapter's Y_dev, Dask) names a bad gold row and holds every good one."""
import contextlib

import numpy as np
import pandas as pd
import pytest

from crowd_keras.cli import main


@pytest.fixture
def answers(tmp_path):
    """A CSV of 3 annotations on each of 6 items with integer ids and integer labels."""
    src = tmp_path / "answers.csv"
    rows = [(item, worker, (item + (worker == 2)) % 2) for item in range(1, 7)
            for worker in range(3)]
    pd.DataFrame(rows, columns=["task", "worker", "label"]).to_csv(src, index=False)
    return src


def _aggregate(answers, gold, text):
    gold.write_text(text)
    return main(["aggregate", str(answers), "--method", "dawid_skene", "--gold", str(gold),
                 "--out", str(answers.parent / "labels.csv")])


def test_cli_gold_names_the_row_whose_item_id_is_not_plain(answers, tmp_path, capsys):
    # '003' is not item 3; the other ids, written plainly, are still the annotations' items
    assert _aggregate(answers, tmp_path / "gold.csv", "task,label\n1,1\n2,0\n003,1\n") == 1
    assert "gold.csv: line 4: item '003' is not an item of" in capsys.readouterr().err


def test_cli_gold_names_the_row_whose_label_is_no_class(answers, tmp_path, capsys):
    # 'yes' makes pandas read the column as text; the numbers above it are still classes
    assert _aggregate(answers, tmp_path / "gold.csv", "task,label\n1,1\n2,0\n3,yes\n") == 1
    assert "gold.csv: line 4: label 'yes' of item 3 is not one of the classes [0, 1]" in \
        capsys.readouterr().err


@pytest.mark.parametrize("text, message", [
    ("task,label\n1,1\n1,1\n", "item 1 is given more than once, on lines 2 and 3 (the same "
                                "label): one gold label per item"),
    ("task,label\n1,1\n2,0\n1,0\n", "item 1 is given more than once, on lines 2 and 4 "
                                    "(labels 1 and 0)"),
    # two rows without an item are no repeated item 'nan'
    ("task,label\n,1\n2,0\n,0\n", "line 2: missing item ('task', --item)"),
], ids=["same", "conflicting", "missing items"])
def test_cli_gold_repeated_item_is_named_as_written(answers, tmp_path, capsys, text, message):
    # the item was shown as np.int64(1), and the line of its first row was not given
    assert _aggregate(answers, tmp_path / "gold.csv", text) == 1
    assert message in capsys.readouterr().err


def _labeling_functions(n, seed=0, copies=0):
    """Snorkel-style one-class functions (each votes its class on a share of the rows, else
    abstains), with ``copies`` extra copies of the first two (co-votes no model explains)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    L = np.full((n, 6), -1)
    for j in range(6):
        fires = rng.random(n) < np.where(y == j % 2, 0.5, 0.1)
        L[fires, j] = j % 2
    return np.hstack([L] + [L[:, :2]] * copies), y


@pytest.mark.parametrize("copies", [0, 2])
def test_snorkel_labeling_functions_never_hold_the_dev_rows(copies):
    # with copied functions the anchored model is fitted (the full one misfits the co-votes):
    # it held the dev rows at their class while gold_in_fit_ said it did not
    from crowd_keras.integrations.snorkel import CrowdLabelModel

    L, y = _labeling_functions(500, copies=copies)
    wrong = 1 - y[400:]          # gold that contradicts the votes: only holding gives it
    model = CrowdLabelModel(cardinality=2).fit(L[:400], Y_dev=wrong, L_dev=L[400:],
                                               progress_bar=False)
    assert (model.covote_misfit_ > 0.1) == bool(copies)
    assert not model.gold_in_fit_ and model.n_gold_ == 100
    assert (model.label_model_.predict()[400:] == wrong).mean() < 0.5


def test_snorkel_labeling_functions_with_dev_rows_on_dask_as_in_memory():
    # the Dask fit held the dev rows in the full model's trial fit, the in-memory one did not
    da = pytest.importorskip("dask.array")
    import dask

    from crowd_keras.integrations.snorkel import CrowdLabelModel

    L, y = _labeling_functions(500)
    wrong = 1 - y[400:]
    memory = CrowdLabelModel(cardinality=2).fit(L[:400], Y_dev=wrong, L_dev=L[400:],
                                                progress_bar=False)
    with dask.config.set(scheduler="sync"):
        chunked = CrowdLabelModel(cardinality=2).fit(
            da.from_array(L[:400], chunks=200), Y_dev=wrong, L_dev=L[400:], progress_bar=False)
        proba = chunked.predict_proba(da.from_array(L[:400], chunks=200)).compute()
    assert chunked.gold_in_fit_ == memory.gold_in_fit_
    np.testing.assert_allclose(proba, memory.predict_proba(L[:400]), atol=1e-8)


@pytest.mark.parametrize("method", ["auto", "dawid_skene"])
def test_gold_on_labeling_function_votes_on_dask_as_in_memory(method):
    # a crowd model hands labeling-function votes to the abstain-aware model, fitted on the
    # votes alone with the gold items reported at their class; on Dask the gold was held in
    # that fit (other labels moved) and the default model reported n_gold_ = 0
    pytest.importorskip("dask.dataframe")
    import dask
    import dask.dataframe as dd

    from crowd_keras import Annotations
    from crowd_keras.aggregation import get_label_model
    from crowd_keras.distributed import aggregate

    L, y = _labeling_functions(400)
    voted = (L >= 0).any(axis=1)     # a row without votes is no item of a frame
    ann = Annotations.from_label_matrix(L[voted], cardinality=2)
    gold = {ann.item_ids[i]: 1 - y[voted][i] for i in range(30)}   # against the votes
    memory = get_label_model(method).fit(ann, gold=gold)
    with dask.config.set(scheduler="sync"):
        result = aggregate(dd.from_pandas(ann.to_frame(), npartitions=2), method=method,
                           gold=gold)
        labels = result.labels.compute().loc[ann.item_ids]
    assert memory.regime_ == result.model.regime_ == "labeling_functions"
    np.testing.assert_allclose(labels[["p_0", "p_1"]].to_numpy(), memory.predict_proba(),
                               atol=1e-9)
    assert (labels["label"].to_numpy()[:30] == 1 - y[voted][:30]).all()
    if method == "auto":
        assert result.model.n_gold_ == memory.n_gold_ == 30
        np.testing.assert_array_equal(result.model.gold_class_counts_,
                                      memory.gold_class_counts_)


def test_gold_id_of_another_type_says_which_item_it_looks_like():
    from crowd_keras import Annotations, CrowdDataError
    from crowd_keras.aggregation import DawidSkene

    ann = Annotations.from_frame(pd.DataFrame({"task": [1, 1, 2, 2], "worker": [0, 1, 0, 1],
                                               "label": [0, 0, 1, 1]}))
    with pytest.raises(CrowdDataError, match=r"gold item '1' is not an item of the "
                                             r"annotations \(item 1 is: the ids"):
        DawidSkene().fit(ann, gold={"1": 0})
    with pytest.raises(CrowdDataError, match=r"gold item '001' is not an item of the "
                                             r"annotations$"):
        DawidSkene().fit(ann, gold={"001": 0})
    assert DawidSkene().fit(ann, gold={np.int64(2): 0}).predict()[1] == 0


@pytest.mark.parametrize("name", ["majority_vote", "tie_broken_vote", "glad",
                                  "abstain_dawid_skene", "dawid_skene", "auto"])
@pytest.mark.parametrize("votes", ["crowd", "labeling_functions"])
def test_gold_items_are_no_label_issues(name, votes):
    # majority vote, GLAD, the abstain-aware model and every model's labeling-function fit
    # held the gold items at their class but scored them as if unknown: a gold item against
    # its votes had consensus quality near 0 and led label_issues
    from crowd_keras import Annotations
    from crowd_keras.aggregation import get_label_model
    from crowd_keras.datasets import simulate_crowd

    if votes == "crowd":
        sim = simulate_crowd(n_items=200, n_classes=3, n_annotators=10,
                             annotations_per_item=3, seed=1)
        ann, y = sim.annotations, sim.y
    else:
        L, y = _labeling_functions(300)
        ann = Annotations.from_label_matrix(L, cardinality=2)
    gold = np.full(ann.n_items, -1)
    gold[:20] = (y[:20] + 1) % ann.n_classes          # against the votes
    model = get_label_model(name).fit(ann, gold=gold)
    np.testing.assert_array_equal(model.predict()[:20], gold[:20])
    np.testing.assert_allclose(model.consensus_quality()[:20], 1.0)
    issues = model.label_issues()["item"].to_numpy()[:20]
    assert not np.isin(issues, ann.item_ids[:20]).any()
    assert model.next_to_label(5)["item"].isin(ann.item_ids[:20]).sum() == 0
    # and a refit without gold forgets them
    assert getattr(model.fit(ann), "item_log_prior_", None) is None


@pytest.mark.parametrize("gold", [None, "empty"])
def test_min_gold_zero_without_gold_scores_nothing(gold):
    # min_gold=0 is allowed; without gold the in-memory fit failed on len(None), and with
    # no gold item every candidate got a gold accuracy of 0.0 (on Dask in both cases)
    pytest.importorskip("dask.dataframe")
    import dask
    import dask.dataframe as dd

    from crowd_keras.aggregation import AutoLabelModel
    from crowd_keras.datasets import simulate_crowd
    from crowd_keras.distributed import aggregate

    ann = simulate_crowd(n_items=120, n_classes=3, n_annotators=8, annotations_per_item=3,
                         seed=1).annotations
    given = None if gold is None else {}
    memory = AutoLabelModel(min_gold=0, min_heldout=100).fit(ann, gold=given)
    with dask.config.set(scheduler="sync"):
        result = aggregate(dd.from_pandas(ann.to_frame(), npartitions=2), min_gold=0,
                           min_heldout=100, gold=given)
    for model in (memory, result.model):
        assert model.n_gold_ == 0 and model.gold_accuracy_ == {}
        assert model.selection_ == "agreement"
    assert result.model.chosen_ == memory.chosen_


def _export_with_gold_on_an_unannotated_task(tmp_path):
    """The Label Studio demo export with a ground-truth annotation on task 6, which has no
    other annotation."""
    import copy
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).parent / "data" / "label_studio" / "demo.json")
                      .read_text())
    truth = copy.deepcopy(data[3]["annotations"][0])     # task 4's ground truth
    assert truth["ground_truth"] and data[5]["id"] == 6 and not data[5]["annotations"]
    truth.update(id=999, task=6)
    data[5]["annotations"] = [truth]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(data))
    return path


def test_label_studio_scores_only_gold_tasks_with_an_aggregate(tmp_path, capsys):
    # a ground-truth task without any used annotation has no aggregate label: it was scored
    # against the model's guess without labels
    pytest.importorskip("label_studio_sdk")
    from crowd_keras.aggregation import MajorityVote
    from crowd_keras.integrations import label_studio as ls

    path = _export_with_gold_on_an_unannotated_task(tmp_path)
    export = ls.read_export(path, control="sentiment")
    assert export.gold.to_dict() == {4: "negative", 6: "negative"}
    model = MajorityVote().fit(export.annotations)
    n_gold, acc = ls.gold_accuracy(export, model.predict_proba())
    assert n_gold == 1 and acc == (model.predict_labels()[3] == "negative")
    out = tmp_path / "pred.json"
    for method, note in (("majority_vote", None), ("mixture_of_groups", "--method "
                                                   "mixture_of_groups does not take gold")):
        flags = ["--no-gold"] if note is None else []
        assert main(["label-studio", "aggregate", str(path), "--control", "sentiment",
                     "--method", method, "--out", str(out), *flags]) == 0
        printed = capsys.readouterr().out
        assert "1 ground-truth task: too few to score" in printed
        assert "note: 1 ground-truth task without a used annotation not scored" in printed
        assert (note in printed) if note else "does not take gold" not in printed


@pytest.mark.parametrize("method", ["auto", "majority_vote", "mixture_of_groups"])
def test_label_studio_gold_entered_as_votes_does_not_score_the_aggregate(method, tmp_path,
                                                                          capsys):
    # --include-gold --no-gold (or a model that takes no gold) scored the aggregate against
    # the ground truth it had just counted as votes: "right on 1 of 1", circular
    pytest.importorskip("label_studio_sdk")
    out = tmp_path / "pred.json"
    assert main(["label-studio", "aggregate", "tests/data/label_studio/demo.json", "--control",
                 "sentiment", "--method", method, "--out", str(out), "--include-gold",
                 "--no-gold"]) == 0
    printed = capsys.readouterr().out
    assert "entered the aggregate as votes (--include-gold): it is not scored" in printed
    assert "right on" not in printed and "accuracy" not in printed
    assert main(["label-studio", "aggregate", "tests/data/label_studio/demo.json", "--control",
                 "sentiment", "--method", method, "--out", str(out), "--no-gold"]) == 0
    assert "the aggregate is right on" in capsys.readouterr().out   # not votes: scored


def test_cli_gold_numbers_are_text_classes_when_the_answers_are_text(tmp_path, capsys):
    # one answer 'yes' makes every class text ('0', '1', 'yes'); the gold file's 1, read as a
    # number, was 'not one of the classes'
    src = tmp_path / "answers.csv"
    src.write_text("task,worker,label\n1,a,1\n1,b,0\n2,a,0\n2,b,yes\n")
    gold = tmp_path / "gold.csv"
    assert _aggregate(src, gold, "task,label\n1,1\n2,0\n") == 0
    assert "2 gold labels from" in capsys.readouterr().out
    assert pd.read_csv(tmp_path / "labels.csv", dtype=str)["label"].tolist() == ["1", "0"]


def test_gold_id_of_another_type_on_dask_names_the_item_type():
    pytest.importorskip("dask.dataframe")
    import dask
    import dask.dataframe as dd

    from crowd_keras import CrowdDataError
    from crowd_keras.distributed import aggregate

    df = pd.DataFrame({"task": [1, 1, 2, 2], "worker": ["a", "b", "a", "b"],
                       "label": [0, 1, 1, 1]})
    with dask.config.set(scheduler="sync"):
        with pytest.raises(CrowdDataError, match=r"gold item '1' is not an item of the "
                                                 r"annotations \(item 1 is: the ids of gold "
                                                 r"and annotations must be of one type\)"):
            aggregate(dd.from_pandas(df, npartitions=1), method="dawid_skene", gold={"1": 0})
        with pytest.raises(CrowdDataError, match=r"gold item 7 is not an item of the "
                                                 r"annotations$"):
            aggregate(dd.from_pandas(df, npartitions=1), method="dawid_skene", gold={7: 0})


def test_cli_gold_on_labeling_function_votes_is_not_said_to_be_held_in_the_fit(tmp_path, capsys):
    L, y = _labeling_functions(60)
    src = tmp_path / "answers.csv"
    rows = [(i, f"lf{j}", L[i, j]) for i in range(len(L)) for j in range(L.shape[1])
            if L[i, j] >= 0]
    pd.DataFrame(rows, columns=["task", "worker", "label"]).to_csv(src, index=False)
    item = rows[0][0]
    assert _aggregate(src, tmp_path / "gold.csv", f"task,label\n{item},{1 - y[item]}\n") == 0
    printed = capsys.readouterr().out
    assert "1 gold label from" in printed and "kept as the label (labeling-function votes" \
        in printed and "held fixed" not in printed
    labels = pd.read_csv(tmp_path / "labels.csv").set_index("task")["label"]
    assert labels[item] == 1 - y[item]


def test_majority_vote_gold_item_is_no_tie(tmp_path, capsys):
    # a gold item whose votes tie has its known class, not a tie broken to the lowest code
    from crowd_keras.aggregation import MajorityVote

    frame = pd.DataFrame({"task": [1, 1, 2, 2], "worker": ["a", "b", "a", "b"],
                          "label": [0, 1, 0, 1]})
    model = MajorityVote().fit(frame, gold={1: 1})
    assert model.predict().tolist() == [1, 0]
    assert model.tied_items_.tolist() == [False, True] and model.n_tied_items_ == 1
    assert MajorityVote().fit(frame).n_tied_items_ == 2
    src = tmp_path / "answers.csv"
    frame.to_csv(src, index=False)
    gold = tmp_path / "gold.csv"
    gold.write_text("task,label\n1,1\n")
    assert main(["aggregate", str(src), "--method", "majority_vote", "--gold", str(gold),
                 "--out", str(tmp_path / "labels.csv")]) == 0
    assert "1 tied item (" in capsys.readouterr().out
    assert pd.read_csv(tmp_path / "labels.csv")["tied"].tolist() == [False, True]


@pytest.mark.parametrize("gold, hint", [
    (pd.Series({1: 0, 2: np.nan}), "gold label nan of item 2 .*; leave the items without a "
                                   r"known class out of the mapping \(e.g. gold.dropna\(\)\)"),
    ({1: -1}, "gold label -1 of item 1 .*; leave the items without a known class out"),
    ({1: None}, "gold label None of item 1 .*; leave the items without a known class out"),
    (np.array([0, np.nan]), "dtype float64; write -1, not NaN, where the class is unknown"),
], ids=["series-nan", "mapping-minus-one", "mapping-none", "array-nan"])
def test_gold_unknown_written_the_wrong_way_says_how_to_write_it(gold, hint):
    from crowd_keras import Annotations, CrowdDataError
    from crowd_keras.aggregation import DawidSkene

    ann = Annotations.from_frame(pd.DataFrame({"task": [1, 1, 2, 2], "worker": [0, 1, 0, 1],
                                               "label": [0, 0, 1, 1]}))
    with pytest.raises(CrowdDataError, match=hint):
        DawidSkene().fit(ann, gold=gold)
    with pytest.raises(CrowdDataError, match=r"gold label 5 of item 1 is not one of the "
                                             r"classes \[0, 1\]$"):
        DawidSkene().fit(ann, gold={1: 5})      # no hint where the value is a label


def test_cli_notes_no_gold_mix_when_voting_is_kept(answers, tmp_path, capsys):
    # auto keeps voting here, whose posteriors carry no class prior for the gold's mix to
    # replace: the labels are the same under every target, so a note saying they were
    # decided for the mix (and to pass --target-prior uniform) was false
    (tmp_path / "gold.csv").write_text("task,label\n1,1\n3,1\n")   # one class only
    args = ["aggregate", str(answers), "--gold", str(tmp_path / "gold.csv"), "--out",
            str(tmp_path / "labels.csv"), "--quiet"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "auto (chose majority_vote" in out
    labels = pd.read_csv(tmp_path / "labels.csv")["label"]
    assert "note: the labels are decided" not in out
    assert main(args + ["--target-prior", "uniform"]) == 0
    assert "note: the labels are decided" not in capsys.readouterr().out
    pd.testing.assert_series_equal(pd.read_csv(tmp_path / "labels.csv")["label"], labels)


@pytest.mark.parametrize("gold, noted", [({1: 1, 3: 1}, True), ({1: 1, 2: 0}, False)])
def test_gold_mix_note_when_the_mix_decides_the_labels(gold, noted):
    # the default target prior follows the gold's class mix: gold of one class skews every
    # label toward it (a model with a learned class prior), which is wrong when that gold is
    # not a sample of the items judged
    from crowd_keras import Annotations
    from crowd_keras.aggregation import IBCC, AutoLabelModel
    from crowd_keras.cli._common import gold_mix_note

    rows = [(item, worker, (item + (worker == 2)) % 2) for item in range(1, 7)
            for worker in range(3)]
    ann = Annotations.from_frame(pd.DataFrame(rows, columns=["task", "worker", "label"]))
    model = AutoLabelModel(candidates=[("ibcc", IBCC())]).fit(ann, gold=gold)
    assert model.target_prior_applied_
    note = gold_mix_note(model, [0, 1])
    assert note.startswith("note: the labels are decided for the gold's class mix (gold items "
                           "per class, target share: 0 0 (0.25), 1 2 (0.75))") is noted
    assert ("pass --target-prior uniform" in note) is noted
    uniform = AutoLabelModel(candidates=[("ibcc", IBCC())], target_prior="uniform")
    assert gold_mix_note(uniform.fit(ann, gold=gold), [0, 1]) == ""


def test_cli_classes_declares_a_class_only_the_gold_names(tmp_path, capsys):
    answers = tmp_path / "answers.csv"
    answers.write_text("task,worker,label\nt1,w1,cat\nt1,w2,cat\nt2,w1,dog\nt2,w2,cat\n"
                       "t3,w1,dog\nt3,w2,dog\n")
    (tmp_path / "gold.csv").write_text("task,label\nt1,bird\n")
    args = ["aggregate", str(answers), "--gold", str(tmp_path / "gold.csv"), "--out",
            str(tmp_path / "labels.csv"), "--quiet"]
    assert main(args) == 1
    assert "label 'bird' of item 't1' is not one of the classes ['cat', 'dog'] (a class no " \
           "annotator chose: list every class with --classes)" in capsys.readouterr().err
    assert main(args + ["--classes", "cat,dog,bird"]) == 0
    assert "3 classes ['cat', 'dog', 'bird']" in capsys.readouterr().out
    labels = pd.read_csv(tmp_path / "labels.csv")
    assert labels.set_index("task").loc["t1", "label"] == "bird"
    # a label of the answers not listed is named at its line
    assert main(args[:1] + [str(answers), "--classes", "cat,bird", "--out",
                            str(tmp_path / "labels.csv")]) == 1
    assert "label 'dog' at line 4 (item 't2', annotator 'w1') is not one of the classes " \
           "['cat', 'bird']" in capsys.readouterr().err


def test_every_unknown_gold_item_is_counted_and_the_first_named():
    # one run names what to fix: only the first unknown item was named, in memory and on Dask
    from crowd_keras import Annotations, CrowdDataError
    from crowd_keras.aggregation import DawidSkene

    frame = pd.DataFrame({"task": [1, 1, 2, 2], "worker": ["a", "b", "a", "b"],
                          "label": [0, 1, 1, 1]})
    ann = Annotations.from_frame(frame)
    gold = {1: 0, 7: 1, 8: 0, 9: 1}
    with pytest.raises(CrowdDataError, match=r"^gold item 7 is not an item of the annotations; "
                                             r"nor are 2 more: 8, 9$"):
        DawidSkene().fit(ann, gold=gold)
    many = {i: 0 for i in range(10, 18)}
    with pytest.raises(CrowdDataError, match=r"gold item 10 .*; nor are 7 more: 11, 12, 13, "
                                             r"14, 15, \.\.\.$"):
        DawidSkene().fit(ann, gold=many)
    pytest.importorskip("dask.dataframe")
    import dask
    import dask.dataframe as dd

    from crowd_keras.distributed import aggregate

    with dask.config.set(scheduler="sync"):
        with pytest.raises(CrowdDataError, match=r"^gold item 7 is not an item of the "
                                                 r"annotations; nor are 2 more: 8, 9$"):
            aggregate(dd.from_pandas(frame, npartitions=1), method="dawid_skene", gold=gold)


def test_gold_label_of_another_type_says_which_class_it_looks_like():
    # {10: "1"} for integer classes: the item id of another type had this hint, the label not
    from crowd_keras import Annotations, CrowdDataError
    from crowd_keras.aggregation import AutoLabelModel

    ann = Annotations.from_frame(pd.DataFrame({"task": [10, 10, 20, 20], "worker": [1, 2, 1, 2],
                                               "label": [0, 1, 1, 1]}))
    with pytest.raises(CrowdDataError, match=r"gold label '1' of item 10 is not one of the "
                                             r"classes \[0, 1\] \(class 1 is: gold labels must "
                                             r"be of the classes' type\)$"):
        AutoLabelModel().fit(ann, gold={10: "1"})
    with pytest.raises(CrowdDataError, match=r"gold label 2 of item 10 is not one of the "
                                             r"classes \[0, 1\]$"):
        AutoLabelModel().fit(ann, gold={10: 2})


def test_cli_gold_file_without_rows_is_an_error(answers, tmp_path, capsys):
    # it fitted without gold and said "0 gold labels from gold.csv held fixed in the fit"
    assert _aggregate(answers, tmp_path / "gold.csv", "task,label\n") == 1
    err = capsys.readouterr().err
    assert "gold.csv: no gold labels: the file has a header line and no rows" in err
    assert not (answers.parent / "labels.csv").exists()


def _crowd_files(tmp_path, crowd, n_gold):
    """The crowd's annotations and its first ``n_gold`` true classes as aggregate's CSVs."""
    src, gold = tmp_path / "answers.csv", tmp_path / "gold.csv"
    crowd.annotations.to_frame().to_csv(src, index=False)
    pd.DataFrame({"task": crowd.annotations.item_ids[:n_gold],
                  "label": crowd.y[:n_gold]}).to_csv(gold, index=False)
    return src, gold


@pytest.mark.parametrize("kind, n_gold, said", [
    # 100 gold items switch the choice from voting to an annotator model
    ("dense_biased", 100, r"by gold, accuracy \d\.\d{3} on 100 gold items hidden from it\)"),
    # 60 gold items checked the choice by agreement and kept it
    ("biased_experts", 60, r"by agreement, kept on 60 gold items: no candidate clearly more "
                           r"accurate there\)"),
])
def test_cli_says_what_the_gold_did_to_the_choice(tmp_path, capsys, kind, n_gold, said):
    # "by agreement" alone, with 20 or more gold items, read as if the gold were not used
    import re

    from crowd_keras.aggregation import AutoLabelModel
    from crowd_keras.datasets import simulate_failure_kind

    crowd = simulate_failure_kind(kind, seed=0, scale=0.5)
    src, gold = _crowd_files(tmp_path, crowd, n_gold)
    assert main(["aggregate", str(src), "--gold", str(gold), "--out",
                 str(tmp_path / "labels.csv")]) == 0
    out = capsys.readouterr().out
    assert re.search(said, out), out
    codes = np.full(crowd.annotations.n_items, -1)
    codes[:n_gold] = crowd.y[:n_gold]
    model = AutoLabelModel().fit(crowd.annotations, gold=codes)
    assert f"(chose {model.chosen_}" in out
    assert main(["aggregate", str(src), "--out", str(tmp_path / "plain.csv")]) == 0
    assert "gold items" not in capsys.readouterr().out


def _function_votes(n=400, m=6, seed=0):
    """Snorkel-style votes (each function one class, else abstaining) and their truth, every
    row with a vote."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    L = np.full((n, m), -1)
    for j in range(m):
        fires = rng.random(n) < np.where(y == j % 2, 0.5, 0.1)
        L[fires, j] = j % 2
    keep = (L >= 0).any(axis=1)
    return L[keep], y[keep]


@pytest.mark.parametrize("method", ["dawid_skene", "auto"])
def test_function_quality_reads_gold_items_at_their_class(method):
    # a crowd model on labeling-function votes reports its gold items at their class, but its
    # annotator_quality_ (each function's mean posterior of its votes) was read off the
    # labeling-function model's posteriors, as if no gold had been given; Dask the same
    from crowd_keras import Annotations
    from crowd_keras.aggregation import get_label_model

    L, y = _function_votes()
    ann = Annotations.from_label_matrix(L, cardinality=2)
    gold = {i: int(1 - y[i]) for i in range(150)}       # against the votes: it shows
    model = get_label_model(method).fit(ann, gold=gold)
    assert model.regime_ == "labeling_functions"
    post = model.predict_proba()
    voted = [L[:, j] >= 0 for j in range(L.shape[1])]
    expected = [post[rows, L[rows, j]].mean() for j, rows in enumerate(voted)]
    np.testing.assert_allclose(model.annotator_quality_["accuracy"], expected)
    plain = get_label_model(method).fit(ann)
    np.testing.assert_allclose(plain.annotator_quality_["accuracy"],
                               plain.labeling_function_model_.annotator_quality_["accuracy"])
    pytest.importorskip("dask.dataframe")
    import dask
    import dask.dataframe as dd

    from crowd_keras.distributed import aggregate

    with dask.config.set(scheduler="sync"):
        result = aggregate(dd.from_pandas(ann.to_frame(), npartitions=3), method=method,
                           gold=gold)
    np.testing.assert_allclose(result.annotator_quality["accuracy"], expected)


@pytest.mark.parametrize("method", ["dawid_skene", "majority_vote", "glad", "auto"])
def test_predict_of_the_fitted_annotations_keeps_the_gold(method):
    # fit(ann, gold=...).predict(ann) scored ann as new annotations: its gold items lost their
    # class, while label_issues(ann) / consensus_quality(ann) read them at it
    from crowd_keras.aggregation import get_label_model
    from crowd_keras.datasets import simulate_crowd

    sim = simulate_crowd(n_items=100, n_classes=3, n_annotators=8, seed=8)
    ann = sim.annotations
    wrong = (sim.y + 1) % 3                      # gold against the crowd: only holding gives it
    model = get_label_model(method).fit(ann, gold={i: int(wrong[i]) for i in range(30)})
    np.testing.assert_array_equal(model.predict(ann)[:30], wrong[:30])
    np.testing.assert_allclose(model.predict_proba(ann), model.predict_proba())
    issues = model.label_issues(ann).set_index("item").sort_index()
    np.testing.assert_array_equal(issues["consensus_label"], model.predict(ann))
    # a copy is new annotations: scored under the fitted model, without the gold
    copy = ann.subset(np.arange(ann.n_items))
    plain = get_label_model(method).fit(ann)
    assert (model.predict(copy)[:30] != wrong[:30]).any()
    np.testing.assert_allclose(plain.predict_proba(ann), plain.predict_proba(copy))
    stranger = ann.to_frame().drop_duplicates("task").head(3).assign(worker="stranger")
    with pytest.warns(UserWarning, match="none of the 3 new annotations") if \
            method != "majority_vote" else contextlib.nullcontext():
        model.predict_proba(stranger)
    if method == "majority_vote":            # a vote counts whoever gave it
        assert not hasattr(model, "n_unknown_annotations_")
    else:
        assert model.n_unknown_annotations_ == 3
    model.predict_proba(ann)                     # the fitted items: nothing left out
    assert model.n_unknown_annotations_ == 0


@pytest.mark.parametrize("method", ["majority_vote", "dawid_skene", "glad", "ebcc"])
@pytest.mark.parametrize("known", [True, False])
def test_next_to_label_never_proposes_a_gold_item(method, known):
    # a k beyond the items with a positive gain listed gold items (gain 0) among the items
    # no single answer can flip, by item order: the five gold items came first of those
    from crowd_keras.aggregation import get_label_model
    from crowd_keras.aggregation.quality import next_to_label
    from crowd_keras.datasets import simulate_crowd

    sim = simulate_crowd(n_items=60, n_classes=3, n_annotators=6, annotations_per_item=3,
                         seed=0)
    ann = sim.annotations
    gold = pd.Series(sim.y[:5], index=ann.item_ids[:5])
    model = get_label_model(method).fit(ann, gold=gold)
    if known:
        chosen = model.next_to_label(60)
    else:   # nobody's quality known: the pooled matrix
        chosen = next_to_label(60, model.posteriors_, ann, item_log_prior=model.item_log_prior_)
    assert len(chosen) == 55 and not chosen["item"].isin(gold.index).any()
    assert (chosen["expected_gain"] == 0).any()    # the zero-gain items are still listed
    assert chosen["item"].is_unique


def test_cli_gold_from_the_standard_input(answers, tmp_path):
    # '-' is the standard input for the answers but was a file named '-' for --gold
    # ("-: file not found"); both on the standard input, the second read found it empty
    # ("/dev/stdin: the file is empty (no header line)")
    import subprocess
    import sys

    def run(*args, stdin):
        return subprocess.run([sys.executable, "-m", "crowd_keras", "aggregate", *args,
                               "--method", "dawid_skene", "--out", str(tmp_path / "o.csv"),
                               "--quiet"], input=stdin, capture_output=True, text=True,
                              timeout=300)

    done = run(str(answers), "--gold", "-", stdin="task,label\n1,0\n4,1\n")
    assert done.returncode == 0, done.stderr
    assert "2 gold labels from /dev/stdin held fixed in the fit" in done.stdout
    labels = pd.read_csv(tmp_path / "o.csv").set_index("task")["label"]
    assert labels[1] == 0 and labels[4] == 1
    for gold in ("-", "/dev/stdin"):
        refused = run("-", "--gold", gold, stdin=answers.read_text())
        assert refused.returncode == 2
        assert "the input and --gold both read '/dev/stdin', which can be read once; give " \
               "one of them a file" in refused.stderr


@pytest.mark.parametrize("text, message", [
    ("task,label\n1,cat \n", "line 2: label 'cat ' of item 1 is not one of the classes "
                             "['cat', 'dog'] (class 'cat' is: remove the spaces around it)"),
    ("task,label\n 1,cat\n", "answers.csv (item 1 is: remove the spaces around it)")])
def test_cli_gold_value_with_spaces_around_it_says_so(tmp_path, capsys, text, message):
    # 'cat ' (a gold file written 'task, label' style) was 'a class no annotator chose:
    # list every class with --classes', which cannot help (--classes strips the names)
    answers = tmp_path / "answers.csv"
    answers.write_text("task,worker,label\n1,a,cat\n1,b,dog\n2,a,dog\n2,b,dog\n")
    (tmp_path / "gold.csv").write_text(text)
    assert main(["aggregate", str(answers), "--gold", str(tmp_path / "gold.csv"), "--out",
                 str(tmp_path / "labels.csv"), "--quiet"]) == 1
    assert message in capsys.readouterr().err


def test_cli_gold_value_against_spaced_answers_says_where_the_spaces_are(tmp_path, capsys):
    # the answers wrote ' cat' everywhere: the hint was "a class no annotator chose: list
    # every class with --classes", which cannot help
    answers = tmp_path / "answers.csv"
    answers.write_text("task,worker,label\n1,a, cat\n1,b, cat\n2,a,dog\n")
    (tmp_path / "gold.csv").write_text("task,label\n1,cat\n")
    assert main(["aggregate", str(answers), "--gold", str(tmp_path / "gold.csv"), "--out",
                 str(tmp_path / "labels.csv"), "--quiet"]) == 1
    assert "(class ' cat' of the answers has spaces around it: remove them there)" in \
        capsys.readouterr().err


def test_gold_class_code_for_named_classes_says_a_mapping_takes_labels():
    # {item: 1} against the classes ['bird', 'cat'] named the value but not that it reads as a
    # class code (the aligned arrays of codes are the other form of gold), in memory and on Dask
    from crowd_keras import Annotations, CrowdDataError
    from crowd_keras.aggregation import DawidSkene

    frame = pd.DataFrame({"task": [1, 1, 2, 2], "worker": ["a", "b", "a", "b"],
                          "label": ["bird", "cat", "cat", "cat"]})
    message = (r"^gold label 1 of item 2 is not one of the classes \['bird', 'cat'\] \(class "
               r"code 1 is 'cat': a mapping takes class labels\)$")
    with pytest.raises(CrowdDataError, match=message):
        DawidSkene().fit(Annotations.from_frame(frame), gold={2: np.int64(1)})
    with pytest.raises(CrowdDataError, match=r"the classes \['bird', 'cat'\]$"):
        DawidSkene().fit(Annotations.from_frame(frame), gold={2: 2})     # no class 2: no hint
    dd = pytest.importorskip("dask.dataframe")
    from crowd_keras.distributed import aggregate
    with pytest.raises(CrowdDataError, match=message):
        aggregate(dd.from_pandas(frame, npartitions=1), method="dawid_skene", gold={2: 1})


@pytest.mark.parametrize("method, held", [("abstain_dawid_skene", True), ("dawid_skene", False)])
def test_cli_gold_on_labeling_function_votes_says_whether_the_fit_held_it(tmp_path, capsys,
                                                                          method, held):
    # the abstain-aware model fitted as the method holds gold in its labeling-function regime
    # too (its other items move with it) but was said to take none; a crowd model handing the
    # votes over fits them without the gold
    import json

    from crowd_keras import Annotations
    from crowd_keras.aggregation import get_label_model
    from crowd_keras.integrations import label_studio as ls

    L, y = _labeling_functions(200)
    rows = [(i, f"lf{j}", L[i, j]) for i in range(len(L)) for j in range(L.shape[1])
            if L[i, j] >= 0]
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    items = frame["task"].unique()[:60]
    gold = pd.Series(1 - y[items], index=items)           # against the votes
    ann = Annotations.from_frame(frame)
    without, with_gold = (get_label_model(method).fit(ann, **kw).predict_proba()
                          for kw in ({}, {"gold": gold}))
    rest = ~np.isin(ann.item_ids, items)
    assert bool(np.abs(with_gold[rest] - without[rest]).max() > 0.01) is held   # what the fit did
    (tmp_path / "answers.csv").write_text(frame.to_csv(index=False))
    (tmp_path / "gold.csv").write_text(gold.rename_axis("task").rename("label")
                                       .reset_index().to_csv(index=False))
    assert main(["aggregate", str(tmp_path / "answers.csv"), "--method", method, "--gold",
                 str(tmp_path / "gold.csv"), "--out", str(tmp_path / "o.csv"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert ("60 gold labels from" in out) and ("held fixed in the fit" in out) is held
    assert ("kept as the labels (labeling-function votes: --method abstain_dawid_skene holds "
            "gold in the fit)" in out) is not held
    tasks = [{"id": int(t), "data": {"text": str(t)}, "annotations": [
        {"id": 1000 * int(t) + n, "completed_by": int(r.worker[2:]), "task": int(t),
         "was_cancelled": False, "ground_truth": False,
         "result": [{"from_name": "c", "to_name": "text", "type": "choices",
                     "value": {"choices": [f"c{r.label}"]}}]}
        for n, r in enumerate(group.itertuples())] + ([
            {"id": 1000 * int(t) + 999, "completed_by": 99, "task": int(t),
             "was_cancelled": False, "ground_truth": True,
             "result": [{"from_name": "c", "to_name": "text", "type": "choices",
                         "value": {"choices": [f"c{gold[t]}"]}}]}] if t in gold else [])}
        for t, group in frame.groupby("task")]
    export = tmp_path / "export.json"
    export.write_text(json.dumps(tasks))
    assert main(["label-studio", "aggregate", str(export), "--method", method, "--out",
                 str(tmp_path / "p.json"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert ("60 ground-truth tasks held at their label in the fit" in out) is held
    assert ("kept at their label (labeling-function votes: --method abstain_dawid_skene "
            "holds gold in the fit)" in out) is not held
    assert len(ls.read_export(export).gold) == 60


def test_classes_as_a_mapping_to_other_codes_is_refused():
    # classes={'cat': 1, 'dog': 0} was read as its keys in order, the codes ignored: gold
    # given as codes under that mapping (dog = 0) held the items at the other class
    from crowd_keras import Annotations
    from crowd_keras.aggregation import DawidSkene

    frame = pd.DataFrame({"task": [1, 1, 2, 2], "worker": ["a", "b", "a", "b"],
                          "label": ["cat", "cat", "dog", "cat"]})
    message = (r"^identifiers must be a list in code order, got a dict whose values are not "
               r"0..1 in its keys' order \(its keys would be read in that order, its values "
               r"ignored\); pass sorted\(ids, key=ids.get\) for the order its values give$")
    with pytest.raises(TypeError, match=message):
        Annotations.from_frame(frame, classes={"cat": 1, "dog": 0})
    dd = pytest.importorskip("dask.dataframe")
    from crowd_keras.distributed import aggregate
    with pytest.raises(TypeError, match=message):
        aggregate(dd.from_pandas(frame, npartitions=1), classes={"cat": 1, "dog": 0},
                  gold={2: "dog"})
    # codes in the keys' order are that order: read as before
    ann = Annotations.from_frame(frame, classes={"dog": 0, "cat": 1})
    assert ann.classes.tolist() == ["dog", "cat"]
    assert DawidSkene().fit(ann, gold=np.array([-1, 0])).predict_labels()[1] == "dog"


@pytest.mark.parametrize("name", ["dawid_skene", "ibcc", "bwa", "ebcc"])
def test_gold_items_posteriors_are_exactly_one_hot(name):
    """EBCC summed a gold item's subtypes to 1 - 2e-16 (the CLI wrote 0.9999999999999999)."""
    from crowd_keras.aggregation import get_label_model
    from crowd_keras.datasets import simulate_failure_kind

    crowd = simulate_failure_kind("many_sparse", seed=0, scale=0.3)
    ann, y = crowd.annotations, np.asarray(crowd.y)
    gold = np.full(ann.n_items, -1)
    gold[:30] = y[:30]
    post = get_label_model(name).fit(ann, gold=gold).predict_proba()
    np.testing.assert_array_equal(post[:30], np.eye(ann.n_classes)[y[:30]])


@pytest.mark.parametrize("name", ["majority_vote", "dawid_skene", "auto"])
def test_gold_codes_beside_a_frame_are_refused_a_mapping_is_read_by_id(name):
    """The frame's items come b, a, c; an array [1, -1, -1] meant for b landed on a (the
    annotations read from a frame sort their ids), with no error."""
    from crowd_keras import CrowdDataError
    from crowd_keras.aggregation import get_label_model

    frame = pd.DataFrame({"task": ["b", "b", "a", "a", "c", "c"], "worker": ["x", "y"] * 3,
                          "label": [0, 0, 1, 1, 1, 1]})
    with pytest.raises(CrowdDataError, match="gold given as an array of class codes beside a "
                                             "frame"):
        get_label_model(name).fit(frame, gold=np.array([1, -1, -1]))
    model = get_label_model(name).fit(frame, gold={"b": 1})
    labels = dict(zip(model.annotations_.item_ids, model.predict()))
    assert labels["b"] == 1 and labels["a"] == 1



def test_snorkel_labeling_functions_named_abstain_model_does_not_hold_the_dev_rows_either():
    """docs/snorkel-gold.md: the adapter's rule for the dev split holds for the abstain-aware
    model named as the method too; Python's fit(gold=) of the same model holds them."""
    from crowd_keras import Annotations
    from crowd_keras.aggregation import AbstainAwareDawidSkene
    from crowd_keras.integrations.snorkel import CrowdLabelModel

    L, y = _labeling_functions(500)
    wrong = 1 - y[400:]
    model = CrowdLabelModel(cardinality=2, method="abstain_dawid_skene").fit(
        L[:400], Y_dev=wrong, L_dev=L[400:], progress_bar=False)
    assert not model.gold_in_fit_ and model.n_gold_ == 100
    assert (model.label_model_.predict()[400:] == wrong).mean() < 0.5
    held = AbstainAwareDawidSkene().fit(Annotations.from_label_matrix(L, cardinality=2),
                                        gold=np.r_[np.full(400, -1), wrong])
    assert (held.predict()[400:] == wrong).all()
