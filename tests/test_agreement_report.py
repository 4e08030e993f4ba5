"""The agreement reports: ``crowd-keras label-studio report`` and ``crowd-keras agree`` write
one self-contained HTML page and a JSON with the same numbers; the page opens in a real
headless Chromium without console errors and shows the JSON's numbers."""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pandas as pd
import pytest

from crowd_keras.agreement import (annotator_agreement, fleiss_kappa, krippendorff_alpha,
                                   span_agreement)
from crowd_keras.cli import main
from crowd_keras.errors import CrowdDataError
from crowd_keras.integrations import label_studio as ls
from crowd_keras.quality_page import PLOT_HINT

from conftest import require_data

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "tests" / "data" / "label_studio" / "demo.json"
TEXTS = ["John met Mary in Paris", "Anna flew to Rome with Tom", "Bob and Eve stayed home"]


def span_region(text, start, end, label):
    return {"from_name": "label", "to_name": "text", "type": "labels",
            "value": {"start": start, "end": end, "text": text[start:end], "labels": [label]}}


def span_export():
    """Three users mark names (PER) and places (LOC); their boundaries differ a little."""
    marks = {1: [[(0, 4, "PER"), (9, 13, "PER"), (17, 22, "LOC")],
                 [(0, 4, "PER"), (13, 17, "LOC"), (23, 26, "PER")], [(0, 3, "PER")]],
             2: [[(0, 4, "PER"), (9, 13, "PER"), (14, 22, "LOC")],
                 [(0, 4, "PER"), (13, 17, "LOC")], [(0, 3, "PER"), (8, 11, "PER")]],
             3: [[(0, 8, "PER"), (17, 22, "LOC")],
                 [(0, 4, "PER"), (23, 26, "PER")], []]}
    tasks = []
    for t, text in enumerate(TEXTS):
        anns = [{"id": 100 * t + u, "completed_by": u,
                 "result": [span_region(text, *m) for m in marks[u][t]]} for u in marks]
        tasks.append({"id": t + 1, "data": {"text": text}, "annotations": anns})
    return tasks


class _Cells(HTMLParser):
    """(data-path, shown text) of every cell that carries a data-path; img sources."""

    def __init__(self):
        super().__init__()
        self.cells, self.images, self.links, self._path = [], [], [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "data-path" in attrs:
            self._path = attrs["data-path"]
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        for key in ("href", "src"):
            if key in attrs and tag != "img":
                self.links.append(attrs[key])

    def handle_data(self, data):
        if self._path is not None:
            self.cells.append((self._path, data.strip()))
            self._path = None


def _lookup(doc, path):
    node = doc
    for part in path.split("/"):
        part = unquote(part)
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def check_page_matches_json(page: str, doc: dict) -> int:
    """Every number the page shows from the JSON equals it (to the 4 decimals shown)."""
    parser = _Cells()
    parser.feed(page)
    assert parser.cells, "no number of the page is tied to the JSON"
    for path, text in parser.cells:
        value = _lookup(doc, path)
        if value is None:
            assert text == "–", (path, text)
        elif isinstance(value, int) or float(value).is_integer():
            assert float(text) == value, (path, text, value)
        else:
            assert abs(float(text) - value) <= 5.0001e-5, (path, text, value)
    assert not parser.links, f"the page loads or links something: {parser.links[:3]}"
    assert all(src.startswith("data:image/png;base64,") for src in parser.images)
    return len(parser.cells)


def test_label_studio_report_per_control_and_overall(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["label-studio", "report", str(DEMO), "--out", str(out), "--quiet",
                 "--method", "majority-vote", "--bootstrap", "50", "--no-plots"]) == 0
    printed = capsys.readouterr().out
    assert "control 'sentiment' (choices)" in printed and "overall (mean over controls)" in printed
    doc = json.loads((out / "report.json").read_text())
    page = (out / "report.html").read_text()
    assert set(doc["controls"]) == {"sentiment", "topics", "quality"}
    assert "Pictures left out on request" in page and "<img" not in page
    # the numbers are the library's on each control's annotations
    alphas = []
    for name, control in doc["controls"].items():
        e = ls.read_export(DEMO, control=name, multiple="combination")
        summary = {r["statistic"]: r["value"] for r in control["agreement"]["summary"]}
        level = "interval" if name == "quality" else "nominal"
        assert control["level"] == level
        assert summary["krippendorff_alpha"] == pytest.approx(
            krippendorff_alpha(e.annotations, level), abs=1e-12)
        assert summary["fleiss_kappa"] == pytest.approx(fleiss_kappa(e.annotations), abs=1e-12)
        assert summary["n_items_single"] == (e.annotations.annotations_per_item() == 1).sum()
        alphas.append(summary["krippendorff_alpha"])
        users = pd.DataFrame(control["annotators"])
        mine = annotator_agreement(e.annotations)
        assert np.allclose(users["kappa_with_others"].astype(float), mine["kappa"],
                           equal_nan=True)
    overall = {r["statistic"]: r["value"] for r in doc["overall"]}
    assert overall["krippendorff_alpha"] == pytest.approx(np.mean(alphas), abs=1e-12)
    assert check_page_matches_json(page, doc) > 50


def test_report_with_pictures_and_spans(tmp_path):
    pytest.importorskip("matplotlib")
    result = ls.quality_report(span_export(), tmp_path, n_bootstrap=50, seed=3)
    doc, page = result["report"], Path(result["html"]).read_text()
    control = doc["controls"]["label"]
    assert control["type"] == "labels" and control["error"] is None
    seq = ls.read_export(span_export()).sequences
    expected = span_agreement(seq)
    got = pd.DataFrame(control["agreement"]["spans"])
    assert np.allclose(got["f1_overlap"], expected["f1_overlap"])
    assert got["no_overlap"].tolist() == expected["no_overlap"].tolist()
    assert PLOT_HINT not in page
    assert page.count("<img") >= 5      # kappa, classes, boundaries, quality, confusion
    check_page_matches_json(page, doc)


def test_without_matplotlib_the_page_says_how_to_get_the_pictures(tmp_path):
    """A Python where matplotlib cannot be imported (a real import failure, in a subprocess)."""
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from crowd_keras.cli import main\n"
            f"sys.exit(main(['label-studio', 'report', {str(DEMO)!r}, '--out', "
            f"{str(tmp_path)!r}, '--quiet', '--method', 'majority-vote', '--bootstrap', '20']))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stderr[-2000:]
    page = (tmp_path / "report.html").read_text()
    assert html.escape(PLOT_HINT) in page and "<img" not in page
    check_page_matches_json(page, json.loads((tmp_path / "report.json").read_text()))


def test_report_errors(tmp_path):
    tasks = span_export()
    del tasks[1]["data"]["text"]
    with pytest.raises(CrowdDataError, match="task 2 has no data field 'text'"):
        ls.quality_report(tasks, tmp_path, n_bootstrap=0)
    lonely = [{"id": 1, "data": {"text": "x"}, "annotations": [
        {"id": 1, "completed_by": 1, "result": [{"from_name": "c", "to_name": "text",
                                                  "type": "choices",
                                                  "value": {"choices": ["a"]}}]}]}]
    with pytest.raises(CrowdDataError, match="at least two annotators"):
        ls.quality_report(lonely, tmp_path, n_bootstrap=0)
    assert not (tmp_path / "report.html").exists()
    assert main(["label-studio", "report", str(DEMO.with_name("demo.csv")), "--out",
                 str(tmp_path), "--quiet"]) == 2


def test_agree_command(tmp_path, capsys):
    folder = require_data("truth_inference", "dog")
    answers = pd.read_csv(folder / "answer.csv").iloc[:3000]
    path = tmp_path / "answers.csv"
    answers.to_csv(path, index=False)
    out = tmp_path / "out"
    assert main(["agree", str(path), "--item", "question", "--annotator", "worker", "--label",
                 "answer", "--bootstrap", "100", "--out", str(out), "--quiet", "--method",
                 "dawid-skene", "--no-plots"]) == 0
    printed = capsys.readouterr().out
    from crowd_keras import Annotations

    ann = Annotations.from_frame(answers, item="question", annotator="worker", label="answer")
    alpha = krippendorff_alpha(ann)
    assert re.search(rf"krippendorff_alpha \(nominal\)\s+{alpha:.4f}  \[", printed)
    doc = json.loads((out / "report.json").read_text())
    assert doc["agreement"]["summary"][0]["value"] == alpha
    check_page_matches_json((out / "report.html").read_text(), doc)
    one = tmp_path / "one.csv"
    one.write_text("task,worker,label\n1,a,x\n2,a,y\n")
    assert main(["agree", str(one), "--quiet"]) == 1
    assert "at least two annotators with annotations, got 1 (only annotator 'a')" in \
        capsys.readouterr().err
    words = tmp_path / "words.csv"
    words.write_text("task,worker,label\n1,a,x\n1,b,y\n")
    assert main(["agree", str(words), "--level", "interval", "--quiet"]) == 1
    assert ("--level interval needs numeric classes (the distance between two labels is "
            "their difference), but class 'x' is not a finite number; classes are ['x', 'y']; "
            "use "
            "--level ordinal (class order) or --level nominal") in capsys.readouterr().err


def test_agree_prints_undefined_statistics_as_n_a(tmp_path, capsys):
    # one class only: alpha, Fleiss' and Cohen's kappa are undefined (chance agreement 1)
    answers = tmp_path / "answers.csv"
    answers.write_text("task,worker,label\n1,a,x\n1,b,x\n2,a,x\n2,b,x\n")
    assert main(["agree", str(answers), "--bootstrap", "0", "--quiet"]) == 0
    lines = dict(line.rsplit(None, 1) for line in capsys.readouterr().out.splitlines()
                 if line.startswith(("krippendorff", "fleiss", "percent", "mean_pairwise")))
    assert lines == {"krippendorff_alpha (nominal)": "n/a", "fleiss_kappa": "n/a",
                     "percent_agreement": "1.0000", "mean_pairwise_kappa": "n/a"}


def test_page_says_no_intervals_without_bootstrap(tmp_path):
    answers = tmp_path / "answers.csv"
    answers.write_text("task,worker,label\n1,a,x\n1,b,x\n2,a,y\n2,b,x\n3,a,y\n3,b,y\n")
    for n, expected in (("0", "intervals: none (no bootstrap replicates)"),
                        ("20", "intervals: 95% bootstrap over items, 20 replicates, seed 0")):
        out = tmp_path / f"boot{n}"
        assert main(["agree", str(answers), "--bootstrap", n, "--out", str(out), "--quiet",
                     "--no-plots"]) == 0
        page = (out / "report.html").read_text()
        assert expected in page


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium here (apt-get install chromium; "
                    ".ci/run installs it)")
def test_report_opens_in_headless_chromium(tmp_path):
    """A real browser renders the page: no console message, and the numbers it shows (the
    DOM after rendering) are the JSON's."""
    pytest.importorskip("matplotlib")
    result = ls.quality_report(span_export(), tmp_path / "rep", n_bootstrap=50)
    run = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
         "--dump-dom", Path(result["html"]).resolve().as_uri()],
        capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    console = [line for line in run.stderr.splitlines() if "CONSOLE" in line]
    assert not console, console
    assert "<img" in run.stdout and "Annotator agreement" in run.stdout
    assert check_page_matches_json(run.stdout, result["report"]) > 20


def test_page_shows_numeric_class_names_as_written(tmp_path):
    # a class column was rounded like a statistic: the classes 0.00001 and 0.00002 of a
    # scale both read "0.0000" in the per-class table, 2.25 read "2.2500"
    scale = [0.00001, 0.00002, 0.5, 2.25]
    path = tmp_path / "answers.csv"
    pd.DataFrame({"task": np.repeat(np.arange(12), 3), "worker": np.tile(["a", "b", "c"], 12),
                  "label": [scale[(i // 3 + (i % 7 == 0)) % 4] for i in range(36)]}) \
        .to_csv(path, index=False)
    out = tmp_path / "out"
    assert main(["agree", str(path), "--bootstrap", "0", "--out", str(out), "--quiet",
                 "--method", "majority_vote", "--no-plots"]) == 0
    page = (out / "report.html").read_text()
    doc = json.loads((out / "report.json").read_text())
    check_page_matches_json(page, doc)
    table = page[page.index("<th class='t'>class</th>"):]
    shown = re.findall(r"<tr><td data-path='agreement/per_class/\d+/class'>([^<]*)</td>",
                       table)
    assert shown == [str(c) for c in scale] == \
        [str(r["class"]) for r in doc["agreement"]["per_class"]]


def test_span_page_says_intervals_resample_documents():
    # a span report counts tokens, but its intervals resample documents (bootstrap_ci's
    # cluster bootstrap): the page said "bootstrap over tokens"
    from crowd_keras.agreement import agreement_report
    from crowd_keras.quality_page import agreement_section
    from crowd_keras.sequences.annotations import SequenceAnnotations

    texts = {"d1": "John met Mary in Paris", "d2": "Anna flew to Rome"}
    seq = SequenceAnnotations.from_dict(texts, {
        "d1": {"ann": [[0, 4, "PER"], [9, 13, "PER"], [17, 22, "LOC"]],
               "bob": [[0, 8, "PER"], [17, 22, "LOC"]]},
        "d2": {"ann": [[0, 4, "PER"], [13, 17, "LOC"]], "bob": [[0, 4, "PER"]]}})
    page = agreement_section(agreement_report(seq, n_bootstrap=20, seed=0), "", plots=False)
    assert "tokens: 9," in page
    assert "intervals: 95% bootstrap over documents, 20 replicates, seed 0" in page
