"""crowd_keras.agreement and ``crowd-keras agree`` on edge inputs, against the reference
implementations (``krippendorff``; ``statsmodels`` for Fleiss' kappa) where one applies.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations, CrowdDataError
from crowd_keras.agreement import agreement_report, bootstrap_ci, krippendorff_alpha
from crowd_keras.cli import main

krippendorff = pytest.importorskip("krippendorff")


def _ratings_file(path, scale, seed=0, n_items=40, n_workers=5):
    """A long CSV of ratings on ``scale`` (some cells missing) and its coders × units
    reliability data (NaN = missing) for the reference."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, len(scale), n_items)
    noise = rng.integers(-1, 2, (n_workers, n_items))
    codes = np.clip(truth + noise, 0, len(scale) - 1)
    values = np.asarray(scale)[codes].astype(float)
    values[rng.random(values.shape) < 0.3] = np.nan
    rows = [(i, f"w{w}", values[w, i]) for w in range(n_workers) for i in range(n_items)
            if np.isfinite(values[w, i])]
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    if all(float(v).is_integer() for v in scale):
        frame["label"] = frame["label"].astype(int)
    frame.to_csv(path, index=False)
    return values


def _printed_alpha(out: str, level: str) -> float:
    return float(re.search(rf"krippendorff_alpha \({level}\)\s+(\S+)", out).group(1))


@pytest.mark.parametrize("scale", [[-2, -1, 0, 1, 2], [0.5, 1.0, 1.5, 2.0, 3.5]])
def test_agree_reads_negative_and_fractional_ratings_by_value(tmp_path, capsys, scale):
    # a rating scale of -2..2 or of half steps: the numbers are the classes, in value order
    path = tmp_path / "ratings.csv"
    reliability = _ratings_file(path, scale)
    for level in ("ordinal", "interval"):
        assert main(["agree", str(path), "--level", level, "--bootstrap", "0", "--quiet"]) == 0
        out = capsys.readouterr().out
        assert f"5 classes {[float(v) if isinstance(scale[1], float) else v for v in scale]}" \
            in out
        ref = krippendorff.alpha(reliability_data=reliability, level_of_measurement=level,
                                 value_domain=np.asarray(scale, float))
        assert _printed_alpha(out, level) == pytest.approx(ref, abs=1e-4)


def test_agree_shows_the_class_order_of_text_labels(tmp_path, capsys):
    # --string-labels: text in alphabetical order, which ordinal alpha uses: printed
    path = tmp_path / "answers.csv"
    path.write_text("task,worker,label\n1,a,10\n1,b,2\n2,a,1\n2,b,1\n")
    assert main(["agree", str(path), "--string-labels", "--level", "ordinal",
                 "--bootstrap", "0", "--quiet"]) == 0
    assert "3 classes ['1', '10', '2']" in capsys.readouterr().out


def test_agree_bad_numeric_labels_name_the_line(tmp_path, capsys):
    path = tmp_path / "answers.csv"
    path.write_text("task,worker,label\n1,a,-1\n1,b,0.5\n2,a,\n2,b,1\n")
    assert main(["agree", str(path), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "answers.csv: missing value (NaN/None) in column 'label' (--label) at line 4 " \
           "(item 2, annotator 'a')" in err
    path.write_text("task,worker,label\n1,a,-1\n1,b,0.5\n2,a,inf\n2,b,1\n")
    assert main(["agree", str(path), "--quiet"]) == 1
    # named as what it is (it was "not one of the classes" of the finite numbers)
    assert "answers.csv: line 4: label inf (item 2, annotator 'a'; column 'label', --label) " \
           "is not a finite number" in capsys.readouterr().err


def test_agree_interval_with_string_labels_says_which_flag(tmp_path, capsys):
    path = tmp_path / "answers.csv"
    path.write_text("task,worker,label\n1,a,1\n1,b,2\n2,a,2\n2,b,2\n")
    # two flags that cannot go together: a usage error (exit 2), as argparse's own
    assert main(["agree", str(path), "--string-labels", "--level", "interval", "--quiet"]) == 2
    assert "--level interval needs numeric labels (the distance between two labels is " \
           "computed from their values), but --string-labels reads them as text; drop " \
           "--string-labels" in capsys.readouterr().err


def test_report_checks_its_settings_without_intervals_too():
    ann = Annotations.from_dense(np.array([[0, 1], [1, 1], [0, 0]]))
    # without replicates the confidence is not used, but the report records it
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\), got 95"):
        agreement_report(ann, n_bootstrap=0, confidence=95)
    with pytest.raises(TypeError, match="max_matrix must be an integer >= 0"):
        agreement_report(ann, n_bootstrap=0, max_matrix=2.5)
    assert agreement_report(ann, n_bootstrap=0, max_matrix=1).kappa_matrix is None


def test_ratio_alpha_matches_the_reference():
    rng = np.random.default_rng(2)
    scale = np.array([0, 1, 2, 5, 10, 20])       # with a zero: 0 vs 0 is distance 0
    codes = np.clip(rng.integers(0, 6, 50)[:, None] + rng.integers(-1, 2, (50, 4)), 0, 5)
    dense = np.where(rng.random(codes.shape) < 0.3, -1, codes)
    ann = Annotations.from_dense(dense, classes=scale.tolist())
    reliability = np.where(dense >= 0, scale[np.maximum(dense, 0)], np.nan).T.astype(float)
    ref = krippendorff.alpha(reliability_data=reliability, level_of_measurement="ratio")
    assert krippendorff_alpha(ann, "ratio") == pytest.approx(ref, abs=1e-9)
    assert krippendorff_alpha(ann, "ratio") != pytest.approx(krippendorff_alpha(ann, "interval"))
    estimate, low, high = bootstrap_ci(ann, "alpha", level="ratio", n_bootstrap=200)
    assert estimate == krippendorff_alpha(ann, "ratio") and low <= estimate <= high
    assert agreement_report(ann, level="ratio", n_bootstrap=0).value("krippendorff_alpha") \
        == estimate
    negative = Annotations.from_dense(dense, classes=(scale - 1).tolist())
    with pytest.raises(CrowdDataError, match="needs non-negative classes .* class -1 is "
                                             "negative; use level='interval'"):
        krippendorff_alpha(negative, "ratio")


def test_agree_ratio_level(tmp_path, capsys):
    path = tmp_path / "counts.csv"
    reliability = _ratings_file(path, [0, 3, 7, 12, 30], seed=4)
    assert main(["agree", str(path), "--level", "ratio", "--bootstrap", "0", "--quiet"]) == 0
    ref = krippendorff.alpha(reliability_data=reliability, level_of_measurement="ratio")
    assert _printed_alpha(capsys.readouterr().out, "ratio") == pytest.approx(ref, abs=1e-4)
    _ratings_file(path, [-2, -1, 0, 1, 2])
    assert main(["agree", str(path), "--level", "ratio", "--quiet"]) == 1
    assert "--level ratio needs non-negative classes" in capsys.readouterr().err


def test_page_shows_the_confidence_as_given():
    from crowd_keras.quality_page import agreement_section

    ann = Annotations.from_dense(np.array([[0, 1], [1, 1], [0, 0], [1, 0], [1, 1]]))
    for confidence, shown in ((0.975, "97.5%"), (0.9, "90%"), (0.95, "95%")):
        report = agreement_report(ann, n_bootstrap=10, confidence=confidence)
        assert f"intervals: {shown} bootstrap over items" in \
            agreement_section(report, "agreement", plots=False)


def test_agree_names_the_line_of_a_long_row_anywhere_in_the_file(tmp_path, capsys):
    path = tmp_path / "answers.csv"
    path.write_text("task,worker,label\n1,a,x\n1,b,y\n2,a,y,extra\n2,b,y\n")
    assert main(["agree", str(path), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "answers.csv: line 4 has 4 fields but the header has 3" in err and "\n\n" not in err


def test_agree_classes_give_the_ordinal_order_of_text_labels(tmp_path, capsys):
    path = tmp_path / "answers.csv"
    path.write_text("task,worker,label\n1,a,low\n1,b,medium\n2,a,high\n2,b,high\n"
                    "3,a,low\n3,b,low\n4,a,medium\n4,b,high\n")
    args = ["agree", str(path), "--level", "ordinal", "--bootstrap", "0", "--quiet"]
    assert main(args + ["--classes", "low, medium, high"]) == 0
    out = capsys.readouterr().out
    assert "3 classes ['low', 'medium', 'high']" in out
    ref = krippendorff.alpha(reliability_data=np.array([[0, 2, 0, 1], [1, 2, 0, 2]], float),
                             level_of_measurement="ordinal")
    assert _printed_alpha(out, "ordinal") == pytest.approx(ref, abs=1e-4)
    assert main(args) == 0                     # alphabetical: another (wrong) order
    assert "3 classes ['high', 'low', 'medium']" in capsys.readouterr().out
    assert main(args + ["--classes", "low,high"]) == 1      # the data disagree: exit 1
    assert ("answers.csv: label 'medium' at line 3 (item 1, annotator 'b') is not one of the "
            "classes ['low', 'high']") in capsys.readouterr().err
    for classes, message in (   # a malformed list: a usage error (exit 2) before any reading
            ("low,,high", "argument --classes: an empty class name in 'low,,high'"),
            ("low,low,medium,high", "argument --classes: class 'low' is listed twice")):
        with pytest.raises(SystemExit) as stop:
            main(args + ["--classes", classes])
        assert stop.value.code == 2 and message in capsys.readouterr().err


def test_agree_classes_of_numeric_labels_are_numbers(tmp_path, capsys):
    path = tmp_path / "ratings.csv"
    reliability = _ratings_file(path, [-2, -1, 0, 1, 2], seed=1)
    args = ["agree", str(path), "--level", "ordinal", "--bootstrap", "0", "--quiet"]
    assert main(args + ["--classes", "2,1,0,-1,-2"]) == 0     # reversed: the same alpha
    out = capsys.readouterr().out
    assert "5 classes [2, 1, 0, -1, -2]" in out
    ref = krippendorff.alpha(reliability_data=reliability, level_of_measurement="ordinal")
    assert _printed_alpha(out, "ordinal") == pytest.approx(ref, abs=1e-4)
    for classes, message in (("-2,-1,0,1,x", "--classes: 'x' is not a number, but the labels "
                                              "are numbers"),
                             ("-2,-1,0,1,inf", "a class that is not a finite number")):
        assert main(args + [f"--classes={classes}"]) == 1     # '=': the list starts with '-'
        assert message in capsys.readouterr().err


def test_report_with_a_generator_seed_goes_to_json():
    import json

    ann = Annotations.from_dense(np.array([[0, 1], [1, 1], [0, 0], [1, 0], [1, 1]]))
    doc = agreement_report(ann, n_bootstrap=10, seed=np.random.default_rng(0)).to_dict()
    assert json.loads(json.dumps(doc, allow_nan=False))["seed"].startswith("Generator(")
    assert agreement_report(ann, n_bootstrap=10, seed=np.int64(3)).to_dict()["seed"] == 3


def test_agree_on_a_header_only_file(tmp_path, capsys):
    path = tmp_path / "answers.tsv"
    path.write_text("task\tworker\tlabel\n")
    assert main(["agree", str(path), "--quiet"]) == 1
    assert "answers.tsv: no annotations: the file has a header line and no rows" in capsys.readouterr().err


def test_page_says_why_the_heat_map_is_missing():
    pytest.importorskip("matplotlib")
    from crowd_keras.quality_page import agreement_section

    ann = Annotations.from_dense(np.array([[0, 1, 1], [1, 1, 0], [0, 0, 0], [1, 0, 1]]))
    page = agreement_section(agreement_report(ann, n_bootstrap=0, max_matrix=2), "agreement")
    assert "no pairwise kappa heat map: 3 annotators are too many" in page
    page = agreement_section(agreement_report(ann, n_bootstrap=0), "agreement")
    assert "kappa heat map" in page and "no pairwise kappa heat map" not in page


def test_agree_reads_an_upper_case_tsv_name_as_tabs(tmp_path, capsys):
    path = tmp_path / "ANSWERS.TSV"
    path.write_text("task\tworker\tlabel\n1\ta\tx\n1\tb\ty\n2\ta\tx\n2\tb\tx\n")
    assert main(["agree", str(path), "--bootstrap", "0", "--quiet"]) == 0
    assert "2 classes ['x', 'y']" in capsys.readouterr().out


def test_agree_says_when_the_header_has_another_separator(tmp_path, capsys):
    path = tmp_path / "answers.csv"
    path.write_text("task;worker;label\n1;a;x\n1;b;y\n")
    assert main(["agree", str(path), "--quiet"]) == 1
    assert "its columns are ['task;worker;label'] (the header is one column holding ';': " \
           "a .csv file is read with commas" in capsys.readouterr().err


def test_ratio_on_text_classes_names_its_own_distance():
    words = Annotations([0, 0, 1, 1], [0, 1, 0, 1], [0, 1, 1, 1], classes=["cat", "dog"])
    with pytest.raises(CrowdDataError, match=r"level='ratio' needs numeric classes \(the "
                       r"distance between two labels is their difference over their sum\), "
                       r"but class 'cat' is not a finite number"):
        krippendorff_alpha(words, "ratio")


def test_a_span_bootstrap_resamples_documents_not_tokens():
    # the tokens of a document were resampled as independent items: with two documents
    # where the annotators agree on every token and two where they agree on none, the 95%
    # interval of percent agreement was about [0.43, 0.57] (200 tokens) where four documents
    # allow [0.25, 0.75] at best
    from crowd_keras.agreement import agreement_report, bootstrap_ci, percent_agreement
    from crowd_keras.sequences.annotations import SequenceAnnotations

    words = " ".join(["w"] * 50)
    texts = {f"d{i}": words for i in range(4)}
    every = [[2 * t, 2 * t + 1, "PER"] for t in range(50)]     # each word a span of its own
    seq = SequenceAnnotations.from_dict(texts, {
        "d0": {"a": every, "b": every}, "d1": {"a": every, "b": every},
        "d2": {"a": every, "b": []}, "d3": {"a": [], "b": every}})
    assert seq.n_tokens == 200
    estimate, low, high = bootstrap_ci(seq, "percent_agreement", n_bootstrap=400, seed=1)
    assert estimate == pytest.approx(0.5) == percent_agreement(seq)
    assert low <= 0.25 and high >= 0.75
    # the token-level Annotations alone still resample tokens
    _, token_low, token_high = bootstrap_ci(seq.annotations, "percent_agreement",
                                            n_bootstrap=400, seed=1)
    assert 0.35 < token_low < 0.5 < token_high < 0.65
    summary = agreement_report(seq, n_bootstrap=400, seed=1).summary.set_index("statistic")
    assert summary.loc["percent_agreement", "low"] == low
    for stat in ("krippendorff_alpha", "fleiss_kappa"):
        row = summary.loc[stat]
        assert row["high"] - row["low"] > 0.5, stat


@pytest.mark.parametrize("per_item", [2, 3, 4, 7])
def test_per_class_alpha_of_a_class_everybody_used_is_nan_whatever_the_item_sizes(per_item):
    # with four annotations on an item (weights 1/3) n - n_k rounded to 1e-16, not 0: alpha 1
    import pandas as pd

    from crowd_keras.agreement import per_class_alpha
    frame = pd.DataFrame({"task": ["t1"] * per_item + ["t2"] * 2,
                          "worker": [f"w{j}" for j in range(per_item)] + ["w0", "w1"],
                          "label": ["yes"] * (per_item + 2)})
    table = per_class_alpha(Annotations.from_frame(frame))
    assert np.isnan(table["alpha"].iloc[0]) and table["n_pairable"].iloc[0] == per_item + 2


@pytest.mark.parametrize("level", ["interval", "ratio"])
def test_an_infinite_declared_class_is_named_not_read_as_one_class(level):
    # every distance to inf is inf: interval and ratio alpha came out NaN, which the docs read
    # as "every pairable label is one class", while the annotators agreed perfectly
    import numpy as np
    import pandas as pd
    from crowd_keras import Annotations, CrowdDataError
    from crowd_keras.agreement import krippendorff_alpha
    frame = pd.DataFrame({"task": [1, 1, 2, 2], "worker": ["a", "b", "a", "b"],
                          "label": [1.0, 1.0, 2.0, 2.0]})
    ann = Annotations.from_frame(frame, classes=[1.0, 2.0, 3.0, np.inf])
    assert krippendorff_alpha(ann, level="nominal") == 1.0
    with pytest.raises(CrowdDataError, match=r"but class inf is not a finite number"):
        krippendorff_alpha(ann, level=level)
    finite = Annotations.from_frame(frame, classes=[1.0, 2.0, 3.0])
    assert krippendorff_alpha(finite, level=level) == 1.0
