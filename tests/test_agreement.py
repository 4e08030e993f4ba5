"""crowd_keras.agreement against the reference implementations on the real sets, and the
definitions checked by brute force on small crowds.

References: ``krippendorff`` (alpha, all four levels), ``sklearn.metrics.cohen_kappa_score`` (each
pair), ``statsmodels.stats.inter_rater.fleiss_kappa`` (Fleiss 1971). Where the definitions
differ (Fleiss with a varying number of ratings per item: statsmodels asserts equal numbers),
the test says so and compares on the items where they agree.
"""
from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations, CrowdDataError
from crowd_keras.agreement import (agreement_report, annotator_agreement, bootstrap_ci,
                                   coincidence_matrix, cohen_kappa_matrix, fleiss_kappa,
                                   item_counts, krippendorff_alpha, overlap_matrix,
                                   pairwise_kappas, per_class_alpha, percent_agreement,
                                   span_agreement, span_pairwise_f1)
from crowd_keras.agreement.spans import span_pairs
from crowd_keras.datasets import load_labelme, load_music, load_pico, load_truth_inference
from crowd_keras.datasets import simulate_crowd
from crowd_keras.sequences.annotations import SequenceAnnotations

from conftest import require_data

krippendorff = pytest.importorskip("krippendorff")
sm_inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
sk_metrics = pytest.importorskip("sklearn.metrics")

TOL = 1e-9
TRUTH_SETS = ("dog", "adult_content", "weather_sentiment")


def _load(name: str) -> Annotations:
    if name == "labelme":
        return load_labelme(require_data("labelme")).annotations
    if name == "music":
        return load_music(require_data("music")).annotations
    folder = require_data("truth_inference", name)
    if name == "adult_content":   # 2,922 repeated (page, worker) answers: the last one kept
        answers = pd.read_csv(folder / "answer.csv")
        return Annotations.from_frame(answers, item="question", annotator="worker",
                                      label="answer", classes=[0, 1, 2, 3], duplicates="last")
    return load_truth_inference(folder)[0]


def _reference_alpha(ann: Annotations, level: str) -> float:
    domain = np.asarray(ann.classes, dtype=float) if level in ("interval", "ratio") else None
    return float(krippendorff.alpha(value_counts=ann.label_counts(), value_domain=domain,
                                    level_of_measurement=level))


def _check_pairs(ann: Annotations, n_pairs: int = 40) -> None:
    """Cohen's kappa of the pairs with the largest overlap and of random ones vs sklearn."""
    table = pairwise_kappas(ann)
    rng = np.random.default_rng(0)
    pick = np.unique(np.concatenate([np.argsort(-table["n_items"].to_numpy())[:n_pairs // 2],
                                     rng.choice(len(table), min(n_pairs // 2, len(table)),
                                                replace=False)]))
    dense = ann.to_dense()
    for r in table.iloc[pick].itertuples():
        a, b = ann.annotator_index([r.annotator_a, r.annotator_b])
        both = (dense[:, a] >= 0) & (dense[:, b] >= 0)
        assert r.n_items == both.sum()
        with warnings.catch_warnings():    # sklearn warns where kappa is undefined (NaN)
            warnings.simplefilter("ignore")
            ref = sk_metrics.cohen_kappa_score(dense[both, a], dense[both, b],
                                               labels=np.arange(ann.n_classes))
        if np.isnan(ref) or r.expected == 1.0:   # chance agreement 1: both NaN
            assert np.isnan(r.kappa) and np.isnan(ref)
        else:
            assert r.kappa == pytest.approx(ref, abs=TOL)
        assert r.agreement == pytest.approx((dense[both, a] == dense[both, b]).mean(), abs=TOL)


def _check_fleiss(ann: Annotations) -> None:
    m = ann.annotations_per_item()
    pairable = m >= 2
    if len(np.unique(m[pairable])) == 1:       # one number of ratings: Fleiss 1971 exactly
        ref = sm_inter_rater.fleiss_kappa(ann.label_counts()[pairable])
        assert fleiss_kappa(ann) == pytest.approx(ref, abs=TOL)
        return
    # statsmodels needs equal numbers of ratings (it asserts so); ours is the generalisation of
    # Fleiss, Levin & Paik (2003) §18.2, which is Fleiss 1971 on the items with the modal count
    with pytest.raises(AssertionError):
        sm_inter_rater.fleiss_kappa(ann.label_counts()[pairable])
    mode = np.bincount(m[pairable]).argmax()
    sub = ann.subset(np.flatnonzero(m == mode))
    ref = sm_inter_rater.fleiss_kappa(sub.label_counts())
    assert fleiss_kappa(sub) == pytest.approx(ref, abs=TOL)


@pytest.mark.parametrize("name", ["labelme", "music", *TRUTH_SETS])
def test_reference_implementations_on_real_sets(name):
    ann = _load(name)
    if name == "adult_content":
        ann = ann.subset(np.arange(3000))      # 25k annotations keep the test fast
    numeric = name in TRUTH_SETS
    for level in ("nominal", "ordinal") + (("interval", "ratio") if numeric else ()):
        assert krippendorff_alpha(ann, level) == pytest.approx(_reference_alpha(ann, level),
                                                               abs=TOL)
    if not numeric:
        with pytest.raises(CrowdDataError, match="numeric classes"):
            krippendorff_alpha(ann, "interval")
    _check_pairs(ann)
    _check_fleiss(ann)


def test_alpha_from_reliability_data_with_missing_values():
    """The package's own entry point (coders × units, NaN = missing) on LabelMe: missing
    values are absent annotations, items with one annotation drop out of both."""
    ann = _load("labelme")
    dense = ann.to_dense().astype(float).T
    dense[dense < 0] = np.nan
    ref = krippendorff.alpha(reliability_data=dense, level_of_measurement="nominal")
    assert krippendorff_alpha(ann) == pytest.approx(ref, abs=TOL)


def test_pico_token_level():
    seq = load_pico(require_data("pico"), splits=("acl17-test",)).sequences
    tokens = seq.annotations
    for level in ("nominal", "ordinal"):
        ref = krippendorff.alpha(value_counts=tokens.label_counts(), level_of_measurement=level)
        assert krippendorff_alpha(seq, level) == pytest.approx(ref, abs=TOL)
    _check_pairs(tokens, n_pairs=10)
    _check_fleiss(tokens)
    with pytest.raises(CrowdDataError, match="numeric classes"):
        krippendorff_alpha(seq, "interval")       # classes are the tags "O", "I-Participants"
    table = span_agreement(seq)
    assert table["label"].tolist() == ["Participants", "(all)"]
    every = table.iloc[-1]
    assert 0 < every["f1_exact"] <= every["f1_token"] <= every["f1_overlap"] <= 1
    kinds = ["exact", "end_differs", "start_differs", "both_differ", "no_overlap"]
    assert every[kinds].sum() == every["n_pairs"]


# ---------------------------------------------------------------------- definitions, small crowds
@pytest.fixture(scope="module")
def crowd() -> Annotations:
    sim = simulate_crowd(n_items=300, n_classes=4, n_annotators=12, annotations_per_item=4,
                         annotator_accuracy=(0.4, 0.9), seed=3)
    ann = sim.annotations
    # a few items with one annotation: ignored by alpha and kappa, counted
    keep = np.ones(ann.n_annotations, bool)
    keep[ann.item_starts()[:20, None] + np.arange(1, 4)] = False
    return ann.select(keep)


def test_items_with_one_annotation_are_ignored_and_counted(crowd):
    counts = item_counts(crowd)
    assert counts["n_items_single"] == 20 and counts["n_items_pairable"] == 280
    pairable = crowd.subset(np.flatnonzero(crowd.annotations_per_item() >= 2))
    assert krippendorff_alpha(crowd) == pytest.approx(krippendorff_alpha(pairable), abs=1e-12)
    assert fleiss_kappa(crowd) == pytest.approx(fleiss_kappa(pairable), abs=1e-12)
    report = agreement_report(crowd, n_bootstrap=50)
    assert report.counts["n_items_single"] == 20
    assert report.value("n_items_single") == 20


def test_per_class_alpha_is_alpha_of_the_binarised_labels(crowd):
    table = per_class_alpha(crowd)
    counts = crowd.label_counts()
    for k in range(crowd.n_classes):
        binary = np.stack([counts.sum(1) - counts[:, k], counts[:, k]], 1)
        ref = krippendorff.alpha(value_counts=binary, level_of_measurement="nominal")
        assert table.loc[k, "alpha"] == pytest.approx(ref, abs=TOL)
    o = coincidence_matrix(crowd)
    assert np.allclose(table["specific_agreement"], np.diag(o) / o.sum(1))


def test_percent_agreement_and_matrices(crowd):
    dense = crowd.to_dense()
    shares = []
    for row in dense:
        lab = row[row >= 0]
        if len(lab) >= 2:
            same = (lab[:, None] == lab[None, :]).sum() - len(lab)
            shares.append(same / (len(lab) * (len(lab) - 1)))
    assert percent_agreement(crowd) == pytest.approx(np.mean(shares), abs=TOL)
    kappa, overlap = cohen_kappa_matrix(crowd), overlap_matrix(crowd)
    assert kappa.shape == overlap.shape == (crowd.n_annotators,) * 2
    assert np.allclose(kappa.to_numpy(), kappa.to_numpy().T, equal_nan=True)
    present = dense >= 0
    assert np.array_equal(overlap.to_numpy(), present.T.astype(int) @ present.astype(int))
    no_overlap = overlap.to_numpy() == 0
    assert np.isnan(kappa.to_numpy()[no_overlap]).all()
    assert np.isnan(np.diag(kappa.to_numpy())).all()


def test_annotator_agreement_by_brute_force(crowd):
    dense = crowd.to_dense()
    table = annotator_agreement(crowd)
    for a in range(crowd.n_annotators):
        mine, theirs = [], []
        for i in np.flatnonzero(dense[:, a] >= 0):
            for b in np.flatnonzero(dense[i] >= 0):
                if b != a:
                    mine.append(dense[i, a])
                    theirs.append(dense[i, b])
        mine, theirs = np.array(mine), np.array(theirs)
        p_o = (mine == theirs).mean()
        p_e = sum((mine == k).mean() * (theirs == k).mean() for k in range(crowd.n_classes))
        row = table.iloc[a]
        assert row["n_pairs"] == len(mine)
        assert row["agreement"] == pytest.approx(p_o, abs=TOL)
        assert row["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e), abs=TOL)


def test_bootstrap_is_seeded_and_brackets_the_estimate(crowd):
    for stat in ("alpha", "fleiss_kappa", "percent_agreement"):
        est, lo, hi = bootstrap_ci(crowd, stat, n_bootstrap=300, seed=7)
        assert lo < est < hi
        assert bootstrap_ci(crowd, stat, n_bootstrap=300, seed=7) == (est, lo, hi)
        assert bootstrap_ci(crowd, stat, n_bootstrap=300, seed=8) != (est, lo, hi)
    est, lo, hi = bootstrap_ci(crowd, "alpha", n_bootstrap=300, confidence=0.5, seed=7)
    _, lo95, hi95 = bootstrap_ci(crowd, "alpha", n_bootstrap=300, confidence=0.95, seed=7)
    assert lo95 < lo < hi < hi95
    assert est == pytest.approx(krippendorff_alpha(crowd), abs=1e-12)


def test_bad_input_gets_clear_errors(crowd):
    one = Annotations([0, 1, 2], [0, 0, 0], [0, 1, 0], annotator_ids=["ann"])
    with pytest.raises(CrowdDataError, match="two annotators.*'ann'"):
        krippendorff_alpha(one)
    apart = Annotations([0, 1], [0, 1], [0, 1])
    with pytest.raises(CrowdDataError, match="no item has two annotations"):
        fleiss_kappa(apart)
    words = Annotations([0, 0, 1, 1], [0, 1, 0, 1], [0, 1, 1, 1], classes=["cat", "dog"])
    with pytest.raises(CrowdDataError, match="'cat' is not a finite number"):
        krippendorff_alpha(words, "interval")
    with pytest.raises(ValueError, match="level must be one of"):
        krippendorff_alpha(crowd, "absolute")
    with pytest.raises(TypeError, match="Annotations or SequenceAnnotations"):
        krippendorff_alpha(crowd.to_dense())
    with pytest.raises(ValueError, match="statistic must be one of"):
        bootstrap_ci(crowd, "kappa")


@pytest.mark.parametrize("classes", [2, 5])
def test_both_pair_methods_agree(classes):
    """The within-item pair enumeration (packed sort) and the sparse co-occurrence products
    give the same pairs and counts (items of 1 to 12 annotations, unused classes)."""
    from crowd_keras.agreement.kappa import _pairs

    rng = np.random.default_rng(classes)
    per_item = rng.integers(1, 13, 400)
    items = np.repeat(np.arange(400), per_item)
    annotators = np.concatenate([rng.choice(40, k, replace=False) for k in per_item])
    ann = Annotations(items, annotators, rng.integers(0, classes, len(items)),
                      n_classes=classes + 1)
    enumerated, sparse = _pairs(ann, "enumerate"), _pairs(ann, "sparse")
    for x, y in zip(enumerated, sparse):
        assert np.array_equal(x, y)
    with pytest.raises(ValueError, match="method must be"):
        _pairs(ann, "dense")


def test_pairwise_memory_follows_overlapping_pairs():
    """10,000 annotators, each item labelled by a pair of neighbours: 10,000 overlapping pairs
    out of 50 million; the table and the memory follow the pairs, not annotators²."""
    n = 10_000
    items = np.repeat(np.arange(3 * n), 2)
    first = np.arange(3 * n) % n
    annotators = np.stack([first, (first + 1) % n], 1).ravel()
    labels = np.random.default_rng(0).integers(0, 3, len(items))
    ann = Annotations(items, annotators, labels)
    tracemalloc.start()
    table = pairwise_kappas(ann)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(table) == n and (table["n_items"] == 3).all()
    assert peak < 64 * 2 ** 20      # an annotators² float table alone would be 800 MB


# ---------------------------------------------------------------------------- spans
TEXTS = {"d1": "a b c d e f g h", "d2": "p q r s t"}


def _spans() -> SequenceAnnotations:
    # token i of d1 is at characters 2i..2i+1
    marks = {"d1": {"x": [[0, 3, "A"], [8, 11, "B"]],          # tokens 0-1 A, 4-5 B
                    "y": [[0, 3, "A"], [10, 15, "B"]],         # 0-1 A exact, 5-7 B overlaps
                    "z": [[2, 5, "A"]]},                       # 1-2 A: both boundaries differ
             "d2": {"x": [[0, 1, "A"]], "y": []}}
    return SequenceAnnotations.from_dict(TEXTS, marks, labels=["A", "B"])


def _brute_force(seq: SequenceAnnotations) -> dict:
    """(span, other annotator) matches by explicit sets of tokens."""
    assign, first, last, label = seq.annotation_spans()
    regions = {}
    for x, f, l_, lab in zip(assign, first, last, label):
        regions.setdefault(x, []).append((f, l_, lab))
    out = {"exact": [], "overlap": [], "token": [], "label": []}
    for x, f, l_, lab in zip(assign, first, last, label):
        for y in range(len(seq.assign_doc)):
            if y == x or seq.assign_doc[y] != seq.assign_doc[x]:
                continue
            mine = set(range(f, l_ + 1))
            cover = set()
            for g, h, lab2 in regions.get(y, []):
                if lab2 == lab:
                    cover |= set(range(g, h + 1))
            out["exact"].append(float((f, l_, lab) in regions.get(y, [])))
            out["overlap"].append(float(bool(mine & cover)))
            out["token"].append(len(mine & cover) / len(mine))
            out["label"].append(lab)
    return {k: np.array(v) for k, v in out.items()}


def test_span_matching_by_brute_force():
    seq = _spans()
    ref = _brute_force(seq)
    table = span_agreement(seq).set_index("label")
    for m in ("exact", "overlap", "token"):
        assert table.loc["(all)", f"f1_{m}"] == pytest.approx(ref[m].mean(), abs=TOL)
        for k, name in enumerate(seq.labels):
            assert table.loc[name, f"f1_{m}"] == pytest.approx(ref[m][ref["label"] == k].mean(),
                                                               abs=TOL)
    # by hand: x's A exact with y, vs z both differ; x's B vs y: same... the counts
    counts = table.loc["(all)", ["exact", "end_differs", "start_differs", "both_differ",
                                 "no_overlap"]]
    assert counts.sum() == len(ref["exact"]) == table.loc["(all)", "n_pairs"]
    assert counts["exact"] == 2                    # x↔y on A, both orders
    pairs = span_pairs(seq)
    assert pairs["covered"].sum() == pytest.approx((ref["token"] * (pairs["length"])).sum())


def test_span_pairwise_f1_by_hand():
    seq = _spans()
    table = span_pairwise_f1(seq, "exact").set_index(["annotator_a", "annotator_b"])
    # x vs y: on d1 x has 2 spans, y 2; the A spans match exactly; on d2 x has 1, y none
    row = table.loc[("x", "y")]
    assert (row["n_spans_a"], row["n_spans_b"]) == (3, 2)
    assert row["precision"] == pytest.approx(1 / 3) and row["recall"] == pytest.approx(1 / 2)
    assert row["f1"] == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))
    overlap = span_pairwise_f1(seq, "overlap").set_index(["annotator_a", "annotator_b"])
    assert overlap.loc[("x", "y"), "precision"] == pytest.approx(2 / 3)
    assert overlap.loc[("x", "z"), "f1"] > 0 and table.loc[("x", "z"), "f1"] == 0


def test_span_report_and_errors():
    seq = _spans()
    report = agreement_report(seq, n_bootstrap=20)
    assert {"span_f1_exact", "span_f1_overlap", "span_f1_token"} <= set(report.summary["statistic"])
    assert report.spans is not None and report.span_pairs is not None
    doc = report.to_dict()
    assert doc["spans"][-1]["label"] == "(all)"
    lonely = SequenceAnnotations.from_dict(TEXTS, {"d1": {"x": [[0, 3, "A"]]}}, labels=["A"])
    with pytest.raises(CrowdDataError, match="at least two annotators"):
        span_agreement(lonely)


def test_report_round_trips_to_json(crowd):
    import json

    report = agreement_report(crowd, n_bootstrap=100, seed=1)
    doc = json.loads(json.dumps(report.to_dict()))
    summary = {r["statistic"]: r for r in doc["summary"]}
    assert summary["krippendorff_alpha"]["value"] == krippendorff_alpha(crowd)
    assert summary["fleiss_kappa"]["low"] < summary["fleiss_kappa"]["value"]
    assert len(doc["pairwise"]) == len(pairwise_kappas(crowd))
    assert doc["kappa_matrix"]["kappa"][0][0] is None          # NaN diagonal as null
    frame = pd.DataFrame(doc["per_annotator"])
    assert frame["n_annotations"].sum() == crowd.n_annotations


@pytest.mark.parametrize("index", [0, 1])
def test_docs_examples_run(index):
    """docs/agreement.md's python blocks run as written (in this process: numpy only)."""
    import contextlib
    import io
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "agreement.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 2
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[index], f"docs/agreement.md block {index}", "exec"), {})
    assert "alpha" in out.getvalue()
