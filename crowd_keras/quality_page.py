"""One self-contained HTML page of agreement and annotator quality (the ``report`` commands).

The page has no script and loads nothing at view time: styles are inline and every picture
is a PNG in a ``data:`` URL, drawn with matplotlib (the ``plot`` extra) when it is installed;
without it the page has the same tables and says how to get the pictures. Every number
shown from the JSON report carries ``data-path``, its place in that JSON (keys and list
indices joined by ``/``, each URL-quoted), so a reader (or a test) can check the page against
the JSON.
"""
from __future__ import annotations

import base64
import html
import io
import math
from typing import Any, Optional, Sequence
from urllib.parse import quote

import numpy as np
import pandas as pd

__all__ = ["have_matplotlib", "PLOT_HINT", "number_text", "table_html", "figure_html",
           "agreement_section", "page_html", "join_path", "MAX_CONFUSION_CLASSES"]

#: Classes up to which the busiest annotators' confusion matrices are drawn: the grid grows
#: with the square of the classes (memory, drawing time and the page's size with it).
MAX_CONFUSION_CLASSES = 20

PLOT_HINT = ("The pictures need matplotlib: pip install 'crowd-keras[plot]' and run the "
             "command again.")
_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;
color:#222;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
h3{margin-top:1.5em}table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right}th{background:#f4f4f4}
td.t,th.t{text-align:left}.note{color:#555;font-size:.9em}img{max-width:100%;display:block;
margin:.6em 0}.wide{overflow-x:auto}.hint{background:#fff7e0;border:1px solid #e8d8a0;padding:.5em 1em}
"""


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def join_path(*parts: Any) -> str:
    """A ``data-path``: the JSON keys / indices, URL-quoted, joined by ``/``."""
    return "/".join(quote(str(p), safe="") for p in parts)


def number_text(value: Any) -> str:
    """How a value is shown: integers as they are, other numbers with 4 decimals, NaN and
    missing values as an en dash."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:.4f}"
    return html.escape(str(value))


#: Columns that name a row (a class, an annotator, a task): a number there is shown as written,
#: not rounded like a statistic (classes 0.00001 and 0.00002 both read "0.0000").
NAME_COLUMNS = frozenset({"class", "label", "consensus_label", "annotator", "annotator_a",
                          "annotator_b", "task", "item", "email"})


def _name_text(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return number_text(value)
    return html.escape(str(value))


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def table_html(frame: pd.DataFrame, path: Optional[str] = None, max_rows: Optional[int] = None,
               caption: Optional[str] = None, rows: Optional[Sequence[int]] = None,
               rows_note: str = "first {n}") -> str:
    """A frame as an HTML table; with ``path`` (the JSON list of its records) every numeric
    cell gets ``data-path="<path>/<row>/<column>"``. Numbers are rounded to 4 decimals, but
    in the :data:`NAME_COLUMNS` (classes, annotators, tasks) shown as written.

    ``rows``: the positions of the rows to show, in that order (default: the first
    ``max_rows``), each keeping its position in ``frame`` in its ``data-path``;
    ``rows_note`` says which they are (``{n}``: how many) in the line under a cut table."""
    positions = np.arange(len(frame)) if rows is None else np.asarray(rows, dtype=np.int64)
    if max_rows is not None:
        positions = positions[:max_rows]
    shown = frame.iloc[positions]
    cols = list(shown.columns)
    out = ["<div class='wide'><table>"]
    if caption:
        out.append(f"<caption class='note'>{html.escape(caption)}</caption>")
    out.append("<tr>" + "".join(f"<th class='t'>{html.escape(str(c))}</th>" if i == 0 else
                                f"<th>{html.escape(str(c))}</th>" for i, c in enumerate(cols))
               + "</tr>")
    for i, row in zip(positions, shown.itertuples(index=False, name=None)):
        cells = []
        for c, v in zip(cols, row):
            if _numeric(v):
                attr = f" data-path='{path}/{i}/{quote(str(c), safe='')}'" if path else ""
                text = _name_text(v) if c in NAME_COLUMNS else number_text(v)
                cells.append(f"<td{attr}>{text}</td>")
            else:
                cells.append(f"<td class='t'>{number_text(v)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table></div>")
    if max_rows is not None and len(frame) > max_rows:
        out.append(f"<p class='note'>{html.escape(rows_note.format(n=len(positions)))} of "
                   f"{len(frame)} rows; all are in the JSON report</p>")
    return "\n".join(out)


def figure_html(fig: Any, alt: str) -> str:
    """A matplotlib figure as an inline PNG (the figure is closed)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f"<img alt='{html.escape(alt)}' src='data:image/png;base64,{data}'>"


def _busiest(volume: np.ndarray, limit: int) -> np.ndarray:
    """Codes of the ``limit`` annotators with the most annotations, in code order."""
    return np.sort(np.argsort(-np.asarray(volume), kind="stable")[:limit])


def _annotator_table(frame: pd.DataFrame, path: Optional[str], max_rows: int) -> str:
    """A table of one row per annotator: all of them in order when they fit, else (a large
    crowd) the ``max_rows`` with the most annotations, most first (ties in order), rather
    than the first ones by id."""
    if len(frame) <= max_rows or "n_annotations" not in frame:
        return table_html(frame, path, max_rows=max_rows)
    volume = frame["n_annotations"].to_numpy(dtype=np.float64)
    return table_html(frame, path, max_rows=max_rows,
                      rows=np.argsort(-volume, kind="stable"),
                      rows_note="the {n} annotators with the most annotations, most first,")


def agreement_section(report: Any, path: str, quality: Optional[pd.DataFrame] = None,
                      quality_path: Optional[str] = None, confusion: Optional[np.ndarray] = None,
                      classes: Optional[Sequence] = None, plots: bool = True,
                      max_rows: int = 200) -> str:
    """The tables and pictures of one :class:`~crowd_keras.agreement.AgreementReport`.

    Args:
        path: the report's place in the JSON (its ``to_dict()`` there).
        quality: per-annotator quality from a label model (``n_annotations``, ``accuracy``),
            shown with ``quality_path`` (its JSON records) and drawn as quality vs volume;
            confusion: (W, K, K) the model's confusion matrices, drawn for the busiest
            annotators; classes: their class names.
    """
    from . import plot

    items = "tokens" if report.spans is not None else "items"
    # span reports count tokens but resample documents (bootstrap_ci's cluster bootstrap)
    units = "documents" if report.spans is not None else "items"
    # 6 significant digits: a 97.5% interval is not shown as 98%
    intervals = (f"{report.confidence * 100:g}% bootstrap over {units}, {report.n_bootstrap} "
                 f"replicates, seed {html.escape(str(report.seed))}" if report.n_bootstrap
                 else "none (no bootstrap replicates)")
    parts = [f"<p class='note'>{items}: {number_text(report.counts['n_items'])}, with two or "
             f"more annotations: {number_text(report.counts['n_items_pairable'])}, with one "
             f"(left out of alpha and kappa): {number_text(report.counts['n_items_single'])}; "
             f"annotators: {number_text(report.counts['n_annotators'])}; intervals: "
             f"{intervals}; alpha level: {report.level}</p>",
             table_html(report.summary, f"{path}/summary" if path else None)]
    pictures = plots and have_matplotlib()
    if report.kappa_matrix is not None and pictures:
        keep = _busiest(report.per_annotator["n_annotations"].to_numpy(), 40)
        parts.append("<h3>Pairwise Cohen's kappa</h3>")
        if len(keep) < len(report.kappa_matrix):
            parts.append(f"<p class='note'>the {len(keep)} annotators with the most "
                         "annotations</p>")
        parts.append(figure_html(plot.kappa_matrix(report.kappa_matrix.iloc[keep, keep]).figure,
                                 "kappa heat map"))
    elif pictures:     # the report left the dense matrix out (agreement_report's max_matrix)
        parts.append(f"<p class='note'>no pairwise kappa heat map: "
                     f"{number_text(report.counts['n_annotators'])} annotators are too many "
                     "for the annotators × annotators matrix; the JSON has every pair that "
                     "shares an item</p>")
    parts.append("<h3>Agreement per class (one-vs-rest alpha)</h3>")
    if pictures:
        parts.append(figure_html(plot.class_agreement(report.per_class).figure,
                                 "per-class agreement"))
    parts.append(table_html(report.per_class, f"{path}/per_class"))
    if report.spans is not None:
        parts.append("<h3>Spans: pairwise F1 and boundary disagreements</h3>")
        if pictures:
            parts.append(figure_html(plot.span_boundaries(report.spans).figure,
                                     "span boundaries"))
        parts.append(table_html(report.spans, f"{path}/spans"))
    parts.append("<h3>Each annotator against the others</h3>")
    parts.append(_annotator_table(report.per_annotator, f"{path}/per_annotator", max_rows))
    if quality is not None:
        parts.append("<h3>Annotator quality (label model)</h3>")
        if pictures and "accuracy" in quality and "n_annotations" in quality:
            ax = plot.annotator_quality(quality.dropna(subset=["accuracy"]),
                                        title="estimated accuracy vs annotations")
            parts.append(figure_html(ax.figure, "quality vs volume"))
        n_classes = np.shape(confusion)[-1] if confusion is not None else 0
        if pictures and confusion is not None and len(confusion) and \
                n_classes > MAX_CONFUSION_CLASSES:
            parts.append(f"<p class='note'>The confusion matrices are drawn for up to "
                         f"{MAX_CONFUSION_CLASSES} classes; here there are {n_classes} (every "
                         "matrix is in the JSON report).</p>")
        elif pictures and confusion is not None and len(confusion):
            volume = quality["n_annotations"].to_numpy()
            keep = _busiest(volume, 12)
            keep = keep[volume[keep] > 0]
            fig = plot.confusion_matrices(np.asarray(confusion)[keep],
                                          names=[str(quality["annotator"].iloc[k]) for k in keep],
                                          classes=classes, title="estimated confusion "
                                          "matrices of the busiest annotators (rows: true class)")
            parts.append(figure_html(fig, "confusion matrices"))
        parts.append(_annotator_table(quality, quality_path, max_rows))
    if report.pairwise is not None:
        parts.append("<h3>Pairs of annotators</h3>")
        order = report.pairwise.sort_values("n_items", ascending=False, kind="stable")
        parts.append(table_html(order.reset_index(drop=True), None, max_rows=50,
                                caption="pairs sharing the most items"))
    return "\n".join(parts)


def page_html(title: str, body: str, plots: bool = True, intro: str = "") -> str:
    """The whole page: ``body`` (sections' HTML) with the title, styles and, when the
    pictures are missing, the line that says how to get them."""
    if not have_matplotlib():
        hint = f"<p class='hint'>{html.escape(PLOT_HINT)}</p>"
    else:
        hint = "" if plots else "<p class='hint'>Pictures left out on request (--no-plots).</p>"
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
            f"<h1>{html.escape(title)}</h1>{intro}{hint}\n{body}\n</body></html>\n")
