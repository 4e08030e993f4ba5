"""crowd_keras.agreement against independent oracles on textbook data and edge inputs:
Krippendorff (2011) "Computing Krippendorff's alpha-reliability" (its worked examples), Fleiss
(1971) Table 1, ``krippendorff``, ``sklearn.metrics.cohen_kappa_score``,
``statsmodels.stats.inter_rater`` and nltk's ``AnnotationTask`` (each test skips, saying so,
where its oracle is not installed), and what the reports show for the same data.
"""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from crowd_keras import Annotations
from crowd_keras.agreement import (agreement_report, bootstrap_ci, coincidence_matrix,
                                   fleiss_kappa, krippendorff_alpha, pairwise_kappas,
                                   per_class_alpha, percent_agreement)

TOL = 1e-9
NAN = np.nan

# Krippendorff 2011, section C: four observers, twelve units, values 1-5, missing values; unit
# 12 has a single value (left out). Published: nominal .743, ordinal .815, interval .849,
# ratio .797.
KRIPPENDORFF_C = np.array([[1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
                           [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
                           [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
                           [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN]])
# Fleiss 1971, Table 1: 30 patients, 6 psychiatrists each, 5 diagnoses; kappa .430, P̄ .556
FLEISS_1971 = np.array([
    [0, 0, 0, 6, 0], [0, 3, 0, 0, 3], [0, 1, 4, 0, 1], [0, 0, 0, 0, 6], [0, 3, 0, 3, 0],
    [2, 0, 4, 0, 0], [0, 0, 4, 0, 2], [2, 0, 3, 1, 0], [2, 0, 0, 4, 0], [0, 0, 0, 0, 6],
    [1, 0, 0, 5, 0], [1, 1, 0, 4, 0], [0, 3, 3, 0, 0], [1, 0, 0, 5, 0], [0, 2, 0, 3, 1],
    [0, 0, 5, 0, 1], [3, 0, 0, 1, 2], [5, 1, 0, 0, 0], [0, 2, 0, 4, 0], [1, 0, 2, 0, 3],
    [0, 0, 0, 0, 6], [0, 1, 0, 5, 0], [0, 2, 0, 1, 3], [2, 0, 0, 4, 0], [1, 0, 0, 4, 1],
    [0, 5, 0, 1, 0], [4, 0, 0, 0, 2], [0, 2, 0, 4, 0], [1, 0, 5, 0, 0], [0, 0, 0, 0, 6]])


def _from_reliability(data: np.ndarray, classes: list) -> Annotations:
    """Coders × units values (NaN = missing) as Annotations with these classes."""
    index = {v: k for k, v in enumerate(classes)}
    codes = np.vectorize(lambda v: -1 if np.isnan(v) else index[v])(data.T)
    return Annotations.from_dense(codes, classes=classes)


@pytest.mark.parametrize("level, published", [("nominal", 0.743), ("ordinal", 0.815),
                                              ("interval", 0.849), ("ratio", 0.797)])
def test_krippendorff_2011_worked_example(level, published):
    ann = _from_reliability(KRIPPENDORFF_C, [1, 2, 3, 4, 5])
    assert round(krippendorff_alpha(ann, level), 3) == published
    # the coincidence matrix of the paper's worked nominal example
    o = coincidence_matrix(ann)
    assert o[0, 0] == pytest.approx(7) and o[0, 1] == pytest.approx(4 / 3)
    assert o.sum() == 40            # 41 values, the lone value of unit 12 left out
    # binary, two observers (section A): .095
    binary = Annotations.from_dense(np.array([[0, 1, 0, 0, 0, 0, 0, 0, 1, 0],
                                              [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]]).T)
    assert round(krippendorff_alpha(binary), 3) == 0.095


def test_krippendorff_2011_against_the_package_with_spread_out_values():
    krippendorff = pytest.importorskip("krippendorff", reason="the krippendorff package is "
                                       "the oracle (test extra)")
    # the same data on a non-contiguous scale with a value nobody used: ordinal follows the
    # order only, interval and ratio the values
    scale = [0.5, 2.0, 3.0, 7.0, 20.0, 40.0]          # 3.0 unused, between used values
    used = np.array([0.5, 2.0, 7.0, 20.0, 40.0])
    mapped = np.where(np.isnan(KRIPPENDORFF_C), NAN,
                      used[np.nan_to_num(KRIPPENDORFF_C).astype(int) - 1])
    ann = _from_reliability(mapped, scale)
    for level in ("nominal", "ordinal", "interval", "ratio"):
        ref = krippendorff.alpha(reliability_data=mapped, level_of_measurement=level,
                                 value_domain=scale)
        assert krippendorff_alpha(ann, level) == pytest.approx(ref, abs=TOL)


def test_fleiss_1971_table():
    ann = Annotations.from_counts(FLEISS_1971)
    assert round(fleiss_kappa(ann), 3) == 0.430
    assert round(percent_agreement(ann), 3) == 0.556
    sm = pytest.importorskip("statsmodels.stats.inter_rater", reason="statsmodels is the "
                             "oracle (test extra)")
    assert fleiss_kappa(ann) == pytest.approx(sm.fleiss_kappa(FLEISS_1971), abs=TOL)


def test_pairwise_kappa_against_sklearn_and_statsmodels_with_an_unused_class():
    sk_metrics = pytest.importorskip("sklearn.metrics", reason="scikit-learn is the oracle")
    sm = pytest.importorskip("statsmodels.stats.inter_rater", reason="statsmodels is the "
                             "oracle (test extra)")
    rng = np.random.default_rng(5)
    dense = rng.integers(0, 3, (60, 3))
    dense = np.where(rng.random(dense.shape) < 0.5, dense[:, :1], dense)
    dense[rng.random(dense.shape) < 0.2] = -1
    ann = Annotations.from_dense(dense, classes=["a", "b", "c", "never"])
    for r in pairwise_kappas(ann).itertuples():
        a, b = ann.annotator_index([r.annotator_a, r.annotator_b])
        both = (dense[:, a] >= 0) & (dense[:, b] >= 0)
        ref = sk_metrics.cohen_kappa_score(dense[both, a], dense[both, b])
        table = np.zeros((4, 4))
        np.add.at(table, (dense[both, a], dense[both, b]), 1)
        assert r.kappa == pytest.approx(ref, abs=TOL)
        assert r.kappa == pytest.approx(sm.cohens_kappa(table).kappa, abs=TOL)


def test_undefined_agreement_as_each_oracle_says():
    """Every pairable label one class: alpha, Fleiss' and Cohen's kappa are 0/0, NaN here, in
    the krippendorff package (value counts), statsmodels and scikit-learn; nltk says 1.
    Percent agreement is 1; the lone "b" on a single-annotation item changes nothing."""
    dense = np.array([[0, 0, 0], [0, 0, -1], [1, -1, -1]])
    ann = Annotations.from_dense(dense, classes=["a", "b"])
    assert np.isnan(krippendorff_alpha(ann)) and np.isnan(fleiss_kappa(ann))
    assert np.isnan(pairwise_kappas(ann)["kappa"]).all() and percent_agreement(ann) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        krippendorff = pytest.importorskip("krippendorff", reason="oracle (test extra)")
        assert np.isnan(krippendorff.alpha(value_counts=ann.label_counts(),
                                           level_of_measurement="nominal"))
        reliability = np.where(dense >= 0, dense, NAN).T.astype(float)[:, :2]
        assert np.isnan(krippendorff.alpha(reliability_data=reliability, value_domain=[0, 1]))
        with pytest.raises(ValueError, match="more than one value in the domain"):
            krippendorff.alpha(reliability_data=reliability)     # as docs/agreement.md says
        sm = pytest.importorskip("statsmodels.stats.inter_rater", reason="oracle (test extra)")
        assert np.isnan(sm.fleiss_kappa(ann.label_counts()[:1]))
        sk_metrics = pytest.importorskip("sklearn.metrics", reason="oracle")
        assert np.isnan(sk_metrics.cohen_kappa_score([0, 0], [0, 0]))


def test_nltk_says_one_where_alpha_is_undefined():
    # the one library docs/agreement.md names as answering 1 (not in the test extra)
    nltk = pytest.importorskip("nltk.metrics.agreement", reason="nltk is the oracle (not in "
                               "the test extra)")
    task = nltk.AnnotationTask([(str(c), str(i), "a") for i in range(2) for c in range(2)])
    assert task.alpha() == 1


def test_bootstrap_covers_the_population_value_and_is_seeded():
    """95% percentile intervals over items of simulated crowds cover the value of the
    population (a crowd of 200,000 items) about 95% of the time."""
    def crowd(n: int, rng: np.random.Generator) -> Annotations:
        truth = rng.integers(0, 3, n)
        lab = np.where(rng.random((n, 4)) < 0.7, truth[:, None], rng.integers(0, 3, (n, 4)))
        return Annotations.from_dense(np.where(rng.random((n, 4)) < 0.25, -1, lab),
                                      classes=[0, 1, 2])

    rng = np.random.default_rng(0)
    population = crowd(200_000, rng)
    truth = {"alpha": krippendorff_alpha(population), "fleiss_kappa": fleiss_kappa(population),
             "percent_agreement": percent_agreement(population)}
    hits = dict.fromkeys(truth, 0)
    runs = 120
    for r in range(runs):
        sample = crowd(150, rng)
        for stat, value in truth.items():
            est, low, high = bootstrap_ci(sample, stat, n_bootstrap=300, seed=r)
            hits[stat] += low <= value <= high
            if r == 0:
                assert bootstrap_ci(sample, stat, n_bootstrap=300, seed=r) == (est, low, high)
    for stat, hit in hits.items():
        assert 0.88 <= hit / runs <= 0.995, (stat, hit / runs)


def test_per_class_picture_marks_undefined_classes():
    # a class nobody used has no one-vs-rest alpha (NaN): it was drawn as a bar of length 0,
    # which reads as agreement at chance level (alpha 0)
    pytest.importorskip("matplotlib", reason="the picture needs matplotlib")
    import matplotlib.pyplot as plt

    from crowd_keras import plot

    dense = np.array([[0, 0, 1], [1, 1, 1], [0, 1, 0], [2, 2, 2], [0, 0, 0]]) + 1
    table = per_class_alpha(Annotations.from_dense(dense, classes=["unused", "a", "b", "c"]))
    assert np.isnan(table["alpha"].iloc[0]) and np.isfinite(table["alpha"].iloc[1:]).all()
    ax = plot.class_agreement(table)
    assert [t.get_text() for t in ax.texts] == ["undefined"]
    assert ax.texts[0].get_position()[1] == 0               # on the unused class's row
    assert len(ax.patches) == 3                             # a bar per defined class only
    low, high = sorted(ax.get_ylim())
    assert low <= -0.4 and high >= len(table) - 0.6         # every row in view
    plt.close("all")


def test_report_summary_for_the_textbook_data():
    ann = _from_reliability(KRIPPENDORFF_C, [1, 2, 3, 4, 5])
    report = agreement_report(ann, level="interval", n_bootstrap=200, seed=1)
    assert report.value("krippendorff_alpha") == krippendorff_alpha(ann, "interval")
    assert report.value("n_items_single") == 1 and report.counts["n_items_pairable"] == 11
    again = agreement_report(ann, level="interval", n_bootstrap=200, seed=1)
    assert again.summary.equals(report.summary)


def test_agree_reads_text_labels_that_look_like_missing_markers(tmp_path, capsys):
    """With --string-labels, labels are text: "NA" (not applicable), "None" and "n/a" are
    classes, as the Python reader keeps them (pandas' missing-value markers made them missing
    values, and every such file was refused); only an empty field is missing. A text label
    column is read so without the flag too."""
    from crowd_keras.cli import main
    import pandas as pd

    path = tmp_path / "answers.csv"
    path.write_text("task,worker,label\n1,a,yes\n1,b,NA\n2,a,None\n2,b,None\n3,a,no\n"
                    "3,b,n/a\n4,a,NA\n4,b,NA\n")
    assert main(["agree", str(path), "--string-labels", "--bootstrap", "0", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "5 classes ['NA', 'None', 'n/a', 'no', 'yes']" in out
    frame = pd.DataFrame({"task": [1, 1, 2, 2, 3, 3, 4, 4], "worker": list("abababab"),
                          "label": ["yes", "NA", "None", "None", "no", "n/a", "NA", "NA"]})
    alpha = krippendorff_alpha(Annotations.from_frame(frame))
    assert re.search(rf"krippendorff_alpha \(nominal\)\s+{alpha:.4f}\n", out)
    # a text column is read as written without the flag too (the CLI's shared reader)
    assert main(["agree", str(path), "--bootstrap", "0", "--quiet"]) == 0
    assert "5 classes ['NA', 'None', 'n/a', 'no', 'yes']" in capsys.readouterr().out
    path.write_text("task,worker,label\n1,a,yes\n1,b,\n2,a,NA\n2,b,no\n")   # empty: missing
    for flags in ([], ["--string-labels"]):
        assert main(["agree", str(path), "--quiet", *flags]) == 1
        assert "missing value (NaN/None) in column 'label' (--label) at line 3" in \
            capsys.readouterr().err


@pytest.mark.parametrize("statistic", ["alpha", "fleiss_kappa", "percent_agreement"])
def test_a_bootstrap_replicate_is_the_statistic_of_the_resampled_crowd(statistic):
    """The replicate computed from summed per-item parts equals the statistic recomputed on
    the crowd with the drawn items repeated (all four alpha levels: ordinal distances follow
    each replicate's marginals), on a non-contiguous scale."""
    from crowd_keras.agreement.bootstrap import _parts

    rng = np.random.default_rng(3)
    dense = rng.integers(0, 4, (40, 5))
    dense = np.where(rng.random(dense.shape) < 0.5, dense[:, :1], dense)
    dense[rng.random(dense.shape) < 0.4] = -1
    scale = [0, 1, 3, 7]
    ann = Annotations.from_dense(dense, classes=scale)
    pairable = np.flatnonzero(ann.annotations_per_item() >= 2)
    recompute = {"alpha": krippendorff_alpha,
                 "fleiss_kappa": lambda a, level: fleiss_kappa(a),
                 "percent_agreement": lambda a, level: percent_agreement(a)}[statistic]
    for level in ("nominal", "ordinal", "interval", "ratio"):
        parts, replicate = _parts(ann, statistic, level)
        draw = rng.integers(0, len(pairable), len(pairable))
        counts = np.bincount(draw, minlength=len(pairable)).astype(np.float64)
        got = replicate(np.asarray(parts.T @ counts[:, None]).T)[0]
        resampled = Annotations.from_dense(dense[pairable[draw]], classes=scale)
        assert got == pytest.approx(recompute(resampled, level), abs=TOL)


def test_agree_takes_the_rating_values_seen_as_classes(tmp_path, capsys):
    """A 1..5 rating file (or 1, 5, 10) has those values as classes: the label-code rule made
    1..5 the classes 0..5 and 1, 5, 10 eleven classes, shown in the summary line, the per-class
    table and the coincidences of the report as classes nobody used. The statistics are the
    krippendorff package's on the values (unused values change none of them)."""
    from crowd_keras.cli import main
    import json

    krippendorff = pytest.importorskip("krippendorff", reason="oracle (test extra)")
    path = tmp_path / "ratings.csv"
    reliability = np.array([[1, 10, 1, NAN, 5, 5], [5, 10, NAN, 5, 10, 5],
                            [5, NAN, 1, NAN, 1, 10]])
    rows = [f"{i},w{w},{int(v)}" for w in range(3) for i, v in enumerate(reliability[w])
            if np.isfinite(v)]
    path.write_text("task,worker,label\n" + "\n".join(rows) + "\n")
    for level in ("nominal", "ordinal", "interval", "ratio"):
        out = tmp_path / level
        assert main(["agree", str(path), "--level", level, "--bootstrap", "0", "--quiet",
                     "--out", str(out), "--no-plots", "--method", "majority-vote"]) == 0
        printed = capsys.readouterr().out
        assert "3 classes [1, 5, 10]" in printed
        doc = json.loads((out / "report.json").read_text())["agreement"]
        assert [r["class"] for r in doc["per_class"]] == [1, 5, 10]
        assert doc["coincidences"]["classes"] == [1, 5, 10]
        ref = krippendorff.alpha(reliability_data=reliability, level_of_measurement=level)
        assert doc["summary"][0]["value"] == pytest.approx(ref, abs=TOL)
    path.write_text("task,worker,label\n1,a,1\n1,b,2\n2,a,5\n2,b,4\n3,a,3\n3,b,3\n")
    assert main(["agree", str(path), "--bootstrap", "0", "--quiet"]) == 0
    assert "5 classes [1, 2, 3, 4, 5]" in capsys.readouterr().out


def test_agree_prints_the_report_of_the_same_data(tmp_path, capsys):
    """Every printed statistic and interval is ``agreement_report``'s at the same seed, on
    the textbook data written as a long CSV (a unit with one value, missing values)."""
    from crowd_keras.cli import main
    import pandas as pd

    rows = [(u, f"c{c}", int(v)) for c, coder in enumerate(KRIPPENDORFF_C)
            for u, v in enumerate(coder) if np.isfinite(v)]
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    path = tmp_path / "answers.csv"
    frame.to_csv(path, index=False)
    assert main(["agree", str(path), "--level", "ordinal", "--bootstrap", "200", "--seed",
                 "4", "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "items with two or more annotations: 11; with one (left out of alpha and kappa): 1" \
        in printed
    report = agreement_report(Annotations.from_frame(frame), level="ordinal", n_bootstrap=200,
                              seed=4)
    for row in report.summary.itertuples():
        if row.statistic == "n_items_single":
            continue
        name = "krippendorff_alpha \\(ordinal\\)" if row.statistic == "krippendorff_alpha" \
            else row.statistic
        ci = f"  \\[{row.low:.3f}, {row.high:.3f}\\]" if np.isfinite(row.low) else ""
        assert re.search(rf"^{name}\s+{row.value:.4f}{ci}$", printed, re.M), row.statistic
    assert round(report.value("krippendorff_alpha"), 3) == 0.815
