"""Property tests (hypothesis): any valid input keeps every annotation on its way in and out.

* A Label Studio full JSON export (random tasks, users, choices, skipped, ground-truth and
  repeated annotations) read with :func:`read_export`: every annotation is counted once in
  the summary (used + skipped + without a label + ground truth + superseded = read), the
  used ones are exactly the latest labelled annotation of each user on each task, and the
  predictions hold one entry per task with a used annotation, none invented. The same
  annotations written as a JSON_MIN export read the same.
* A long frame with ids and labels of any kind (strings, sparse large integers) in any row
  order: ``Annotations.from_frame`` keeps every (item, annotator, label) triple, and an
  aggregation gives every item one label.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from crowd_keras import Annotations

CLASSES = ("positive", "negative", "neutral")


@st.composite
def exports(draw, allow_gold=True):
    """(tasks as Label Studio exports them, flat list of the annotations drawn)."""
    task_ids = draw(st.lists(st.integers(1, 10 ** 9), min_size=1, max_size=10, unique=True))
    tasks, drawn, ann_id, clock = [], [], 0, 0
    for tid in task_ids:
        anns = []
        for _ in range(draw(st.integers(0, 5))):
            ann_id += 1
            clock += draw(st.integers(1, 1000))
            user = draw(st.integers(1, 6))
            cancelled = draw(st.booleans()) and draw(st.booleans())   # 1 in 4
            label = None if cancelled else draw(st.one_of(st.none(), st.sampled_from(CLASSES)))
            gold = allow_gold and not cancelled and draw(st.integers(0, 5)) == 0
            stamp = pd.Timestamp("2024-01-01", tz="UTC") + pd.Timedelta(seconds=clock)
            result = [] if label is None else [{"from_name": "sentiment", "to_name": "text",
                                                "type": "choices",
                                                "value": {"choices": [label]}}]
            anns.append({"id": ann_id, "completed_by": user, "result": result,
                         "was_cancelled": cancelled, "ground_truth": gold,
                         "created_at": stamp.isoformat(), "updated_at": stamp.isoformat()})
            drawn.append(dict(task=tid, id=ann_id, user=user, label=label, cancelled=cancelled,
                              gold=gold, time=clock))
        tasks.append({"id": tid, "data": {"text": f"text {tid}"}, "annotations": anns})
    return tasks, drawn


def expected_used(drawn, include_gold=False) -> dict:
    """{(task, user): label} of the latest labelled annotation of each user on each task."""
    out, when = {}, {}
    for a in drawn:
        if a["cancelled"] or a["label"] is None or (a["gold"] and not include_gold):
            continue
        key = (a["task"], a["user"])
        if key not in when or a["time"] > when[key]:
            out[key], when[key] = a["label"], a["time"]
    return out


def triples(export) -> dict:
    frame = export.annotations.to_frame()
    return {(int(t), int(u)): lab for t, u, lab in frame.itertuples(index=False)}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exports())
def test_full_json_every_annotation_counted_once_and_carried_to_predictions(case):
    from crowd_keras.integrations import label_studio as ls
    tasks, drawn = case
    used = expected_used(drawn)
    assume(used)
    export = ls.read_export(tasks, control="sentiment")
    s = export.summary
    assert s.n_annotations_read == len(drawn)
    assert s.n_cancelled == sum(a["cancelled"] for a in drawn)
    assert s.n_without_label == sum(not a["cancelled"] and a["label"] is None for a in drawn)
    assert s.n_gold == sum(a["gold"] and a["label"] is not None for a in drawn)
    assert s.n_used + s.n_cancelled + s.n_without_label + s.n_gold + s.n_superseded \
        + s.n_multiple_skipped == s.n_annotations_read
    assert triples(export) == used                        # nothing lost, nothing invented
    assert list(export.task_ids) == [t["id"] for t in tasks]   # every task, in export order
    proba = export.annotations.label_counts(normalize=True)
    preds = ls.to_predictions(export, np.where(proba.sum(1, keepdims=True) > 0, proba,
                                               1 / export.annotations.n_classes), "prop-v1")
    assert sorted(p["task"] for p in preds) == sorted({t for t, _ in used})
    for p in preds:
        labels = {lab for (t, _), lab in used.items() if t == p["task"]}
        assert p["result"][0]["value"]["choices"][0] in labels  # the argmax of its own votes
        assert 0 < p["score"] <= 1


def _as_json_min(tasks) -> list:
    """The JSON_MIN rows Label Studio writes for these tasks (no skipped annotations)."""
    rows = []
    for task in tasks:
        kept = [a for a in task["annotations"] if not a["was_cancelled"]]
        if not task["annotations"]:
            rows.append({"id": task["id"], "text": task["data"]["text"]})
        for a in kept:
            row = {"id": task["id"], "text": task["data"]["text"], "annotator": a["completed_by"],
                   "annotation_id": a["id"], "created_at": a["created_at"],
                   "updated_at": a["updated_at"]}
            if a["result"]:
                row["sentiment"] = a["result"][0]["value"]["choices"][0]
            rows.append(row)
    return rows


@settings(max_examples=40, deadline=None)
@given(exports(allow_gold=False))
def test_json_min_reads_the_same_annotations_as_full_json(case):
    from crowd_keras.integrations import label_studio as ls
    tasks, drawn = case
    assume(expected_used(drawn))
    full = ls.read_export(tasks, control="sentiment")
    minimal = ls.read_export(_as_json_min(tasks), control="sentiment")
    assert triples(minimal) == triples(full)
    assert minimal.summary.n_used == full.summary.n_used
    assert minimal.summary.n_superseded == full.summary.n_superseded


@st.composite
def frames(draw):
    n = draw(st.integers(1, 60))
    item_kind = draw(st.sampled_from(["int", "str", "big"]))
    label_kind = draw(st.sampled_from(["int", "str", "sparse"]))
    items = draw(st.lists(st.integers(0, 15), min_size=n, max_size=n))
    annotators = draw(st.lists(st.integers(0, 7), min_size=n, max_size=n))
    labels = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    frame = pd.DataFrame({"task": items, "worker": annotators, "label": labels})
    frame = frame.drop_duplicates(["task", "worker"]).sample(frac=1.0, random_state=draw(
        st.integers(0, 2 ** 16))).reset_index(drop=True)   # any row order
    if item_kind == "str":
        frame["task"] = "t" + frame["task"].astype(str)
    elif item_kind == "big":
        frame["task"] = frame["task"] * 10 ** 11 + 7
    if label_kind == "str":
        frame["label"] = np.array(["cat", "dog", "eel", "fox", "gnu"], dtype=object)[frame["label"]]
    elif label_kind == "sparse":
        frame["label"] = frame["label"] * 10 ** 9
    return frame


@settings(max_examples=80, deadline=None)
@given(frames())
def test_frame_keeps_every_triple_and_aggregates_every_item(frame):
    from crowd_keras.aggregation import MajorityVote
    ann = Annotations.from_frame(frame)
    out = ann.to_frame()
    assert ann.n_annotations == len(frame)
    assert set(map(tuple, out.itertuples(index=False))) == \
        set(map(tuple, frame.itertuples(index=False)))
    assert list(ann.item_ids) == sorted(frame["task"].unique())
    assert set(frame["label"]) <= set(ann.classes.tolist())
    assert ann.n_classes <= max(len(set(frame["label"])), int(frame["label"].max()) + 1
                                if frame["label"].dtype.kind == "i" else 0)
    assert ann.annotations_per_item().sum() == len(frame)
    pred = MajorityVote().fit(ann).predict()
    assert len(pred) == ann.n_items
    votes = {t: set(g["label"]) for t, g in frame.groupby("task")}
    assert all(ann.classes[p] in votes[t] for t, p in zip(ann.item_ids, pred))


@pytest.mark.parametrize("rows", [[(2, 1, 0), (0, 0, 1), (2, 0, 1), (1, 1, 0), (0, 1, 0)]])
def test_unsorted_rows_are_sorted_stably_by_item_then_annotator(rows):
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    ann = Annotations.from_frame(frame)
    assert list(zip(ann.items, ann.annotators)) == [(0, 0), (0, 1), (1, 1), (2, 0), (2, 1)]
    last = Annotations.from_frame(pd.concat([frame, frame.assign(label=1)]), duplicates="last")
    assert last.n_duplicates == 5 and set(last.labels) == {1}  # the later row of each pair


def test_the_callers_arrays_stay_writable_and_unshared():
    frame = pd.DataFrame({"task": [0, 1, 2], "worker": [0, 0, 1], "label": [0, 1, 1]})
    ann = Annotations.from_frame(frame)
    items, labels = np.array([0, 1, 2]), np.array([1, 0, 1])
    direct = Annotations(items, np.array([0, 0, 1]), labels)
    assert items.flags.writeable and labels.flags.writeable
    items[0], labels[0] = 2, 0
    frame.loc[0, "label"] = 1
    assert direct.items[0] == 0 and direct.labels[0] == 1 and ann.labels[0] == 0  # own codes


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4), st.integers(0, 1)),
                min_size=2, max_size=60))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_both_sorts_give_one_order(monkeypatch, rows):
    """Annotations are sorted by (item, annotator), later duplicates later, whichever sort
    runs: one value sort of the keys with the row index in their low bits (the usual case),
    or pandas' two counting sorts where key and row index do not fit in 63 bits together
    (at 10M rows, beyond about 5·10¹¹ items × annotators: forced here)."""
    from crowd_keras import annotations as module
    from crowd_keras.codes import keyed_order, sort_order

    items, annotators, labels = (np.array(c, dtype=np.int64) for c in zip(*rows))
    key = items * 5 + annotators
    expected = np.lexsort((np.arange(len(key)), annotators, items))
    bits = max(int(len(key) - 1).bit_length(), 1)   # of the row index
    # the labels ride below the row index, or (no room: 2**(63 - bits) values of key) are
    # gathered; neither form changes the order
    for size, n_labels in ((6 * 5, 2), (6 * 5, 2 ** 40), (2 ** (63 - bits), 2)):
        order, sorted_key, sorted_labels = keyed_order(key, size, labels, n_labels)
        np.testing.assert_array_equal(order, expected)
        np.testing.assert_array_equal(sorted_key, key[expected])
        np.testing.assert_array_equal(sorted_labels, labels[expected])
    assert keyed_order(key, 6 * 5)[2] is None
    assert keyed_order(key, 2 ** (63 - bits) + 1, labels, 2) is None   # key and row: 64 bits
    counted = sort_order(items, annotators, 6, 5)
    np.testing.assert_array_equal(expected if counted is None else counted, expected)
    frame = pd.DataFrame({"task": items, "worker": annotators, "label": labels})
    packed = Annotations.from_frame(frame, duplicates="last").to_frame()
    with monkeypatch.context() as patch:
        patch.setattr(module, "keyed_order", lambda *args: None)
        assert Annotations.from_frame(frame, duplicates="last").to_frame().equals(packed)
    kept = frame.iloc[expected].drop_duplicates(["task", "worker"], keep="last")
    assert list(map(tuple, packed.itertuples(index=False))) == \
        list(map(tuple, kept.itertuples(index=False)))
