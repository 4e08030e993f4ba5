"""Pictures of what the noise models learned (matplotlib, the ``plot`` extra).

Each function takes plain arrays or the label models' attributes, draws on a given
``ax`` (or a new figure) and returns the matplotlib object, so it works in notebooks,
scripts and tests alike::

    from crowd_keras import plot
    fig = plot.confusion_matrices(model.confusion_matrices_[:8], classes=ann.classes)
    fig.savefig("annotators.png")
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

__all__ = ["confusion_matrix", "confusion_matrices", "annotator_quality", "omega_distribution",
           "kappa_matrix", "class_agreement", "span_boundaries"]


def _plt():
    try:
        import matplotlib

        if not _has_display():
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("crowd_keras.plot needs matplotlib: pip install 'crowd-keras[plot]'") from exc
    return plt


def _has_display() -> bool:
    import os

    return bool(os.environ.get("DISPLAY") or os.environ.get("MPLBACKEND"))


#: Characters of a name from the data shown in a picture (the tables and JSON hold it whole):
#: a tightly saved figure grows with its longest tick label, to gigapixels for a long name
NAME_CHARS = 40


def _literal(value: Any) -> str:
    """A name from the data as matplotlib text shown as it is: matplotlib reads text between
    two ``$`` as mathtext (and fails on what mathtext cannot parse), ``\\$`` is a plain ``$``;
    beyond :data:`NAME_CHARS` characters, cut with "…"."""
    text = str(value)
    if len(text) > NAME_CHARS:
        text = text[:NAME_CHARS - 1] + "…"
    return text.replace("$", r"\$")


def confusion_matrix(matrix: Any, classes: Optional[Sequence] = None, ax: Any = None,
                     title: Optional[str] = None, annotate: bool = True, cmap: str = "Blues"):
    """Draw one confusion matrix (classes × classes, rows = true class) as a heat map.

    Values are shown as probabilities in [0, 1]. Returns the ``AxesImage``.
    """
    plt = _plt()
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"a confusion matrix must be square, got shape {m.shape}")
    if ax is None:
        _, ax = plt.subplots(figsize=(1 + 0.5 * m.shape[0], 1 + 0.5 * m.shape[0]))
    image = ax.imshow(m, vmin=0.0, vmax=1.0, cmap=cmap)
    k = m.shape[0]
    names = [_literal(c) for c in (classes if classes is not None else range(k))]
    ax.set_xticks(range(k), names, rotation=90 if k > 4 else 0)
    ax.set_yticks(range(k), names)
    ax.set_xlabel("given label")
    ax.set_ylabel("true class")
    if title:
        ax.set_title(title)
    if annotate and k <= 12:
        for (r, c), v in np.ndenumerate(m):
            ax.text(c, r, f"{v:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if v > 0.6 else "black")
    return image


def confusion_matrices(matrices: Any, names: Optional[Sequence[str]] = None,
                       classes: Optional[Sequence] = None, ncols: int = 4,
                       title: Optional[str] = None):
    """A grid of confusion matrices (e.g. the common one, per-annotator, per-group).

    Args:
        matrices: (n, classes, classes).
        names: a title per matrix (default "0", "1", ...).
    Returns the ``Figure``.
    """
    plt = _plt()
    ms = np.asarray(matrices, dtype=float)
    if ms.ndim == 2:
        ms = ms[None]
    n = ms.shape[0]
    ncols = max(1, min(ncols, n))
    nrows = int(np.ceil(n / ncols))
    size = 1.2 + 0.45 * ms.shape[1]
    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols, size * nrows), squeeze=False)
    labels = list(names) if names is not None else [str(i) for i in range(n)]
    for i, ax in enumerate(axes.ravel()):
        if i < n:
            confusion_matrix(ms[i], classes=classes, ax=ax, title=_literal(labels[i]),
                             annotate=ms.shape[1] <= 6)
        else:
            ax.axis("off")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def annotator_quality(quality: Any, ax: Any = None, title: Optional[str] = None,
                      true_accuracy: Optional[Any] = None):
    """Estimated accuracy against number of annotations, one point per annotator.

    Args:
        quality: a label model's ``annotator_quality_`` frame (columns ``n_annotations``,
            ``accuracy``).
        true_accuracy: optional (annotators,) true accuracies, drawn as hollow markers.
    Returns the ``Axes``.
    """
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.5))
    n = np.asarray(quality["n_annotations"], dtype=float)
    acc = np.asarray(quality["accuracy"], dtype=float)
    ax.scatter(n, acc, s=14, alpha=0.8, label="estimated")
    if true_accuracy is not None:
        ax.scatter(n, np.asarray(true_accuracy, dtype=float), s=18, facecolors="none",
                   edgecolors="black", label="true")
        ax.legend(loc="lower right")
    if n.max(initial=0) / max(n.min(initial=1), 1) > 30:
        ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("annotations per annotator")
    ax.set_ylabel("accuracy")
    ax.set_title(title or "annotator quality")
    return ax


def omega_distribution(omega: Any, ax: Any = None, bins: int = 30, title: Optional[str] = None):
    """Histogram of CoNAL's gate ω: the weight of the common confusion per annotation.

    Returns the ``Axes``.
    """
    plt = _plt()
    w = np.asarray(omega, dtype=float).ravel()
    w = w[np.isfinite(w)]
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.5))
    ax.hist(w, bins=bins, range=(0.0, 1.0), color="tab:orange", alpha=0.85)
    ax.axvline(w.mean() if len(w) else 0.0, color="black", linestyle="--",
               label=f"mean {w.mean() if len(w) else float('nan'):.2f}")
    ax.set_xlabel("ω (weight of the common confusion)")
    ax.set_ylabel("annotations")
    ax.set_title(title or "ω distribution")
    ax.legend()
    return ax


def kappa_matrix(matrix: Any, ax: Any = None, title: Optional[str] = None):
    """Heat map of pairwise agreement (e.g. ``crowd_keras.agreement.cohen_kappa_matrix``):
    annotators × annotators, NaN (no shared item, or kappa undefined: chance agreement 1) in
    grey. Returns the ``Axes``."""
    plt = _plt()
    m = np.asarray(matrix, dtype=float)
    names = [_literal(n) for n in getattr(matrix, "index", range(len(m)))]
    if ax is None:
        size = 2.5 + 0.22 * len(names)
        _, ax = plt.subplots(figsize=(size + 1.2, size))
    cmap = plt.get_cmap("RdYlGn").with_extremes(bad="#dddddd")
    image = ax.imshow(np.ma.masked_invalid(m), vmin=-0.2, vmax=1.0, cmap=cmap)
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.set_title(title or "Cohen's kappa per pair (grey: no shared item or undefined)")
    ax.figure.colorbar(image, ax=ax, fraction=0.046)
    return ax


def class_agreement(per_class: Any, ax: Any = None, column: str = "alpha",
                    title: Optional[str] = None):
    """Horizontal bars of per-class agreement (``crowd_keras.agreement.per_class_alpha``:
    columns ``class`` and ``alpha``); a class whose value is undefined (NaN: a class nobody
    or everybody used) gets no bar and the word "undefined". Returns the ``Axes``."""
    plt = _plt()
    labels = [_literal(c) for c in per_class["class"]]
    values = np.asarray(per_class[column], dtype=float)
    undefined = ~np.isfinite(values)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.8 + 0.3 * len(labels)))
    y = np.arange(len(labels))
    # a zero-length bar would read as agreement at chance level (alpha 0)
    ax.barh(y[~undefined], values[~undefined], color="tab:blue")
    for row in y[undefined]:
        ax.text(0.01, row, "undefined", va="center", color="grey", fontsize=8,
                transform=ax.get_yaxis_transform())
    ax.set_yticks(y, labels)
    ax.set_ylim(len(labels) - 0.5, -0.5)     # first class on top; rows without a bar shown
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlabel(f"one-vs-rest {column}")
    ax.set_title(title or "agreement per class")
    return ax


def span_boundaries(spans: Any, ax: Any = None, title: Optional[str] = None):
    """Stacked bars, per span label, of how another annotator marked each span (exact, end
    differs, start differs, both differ, no overlap): ``crowd_keras.agreement.span_agreement``.
    Returns the ``Axes``."""
    plt = _plt()
    kinds = ["exact", "end_differs", "start_differs", "both_differ", "no_overlap"]
    rows = spans[spans["label"] != "(all)"]
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.9 + 0.35 * len(rows)))
    y = np.arange(len(rows))
    left = np.zeros(len(rows))
    for kind in kinds:
        v = np.asarray(rows[kind], dtype=float)
        ax.barh(y, v, left=left, label=kind.replace("_", " "))
        left += v
    ax.set_yticks(y, [_literal(x) for x in rows["label"]])
    ax.invert_yaxis()
    ax.set_xlabel("(span, other annotator) pairs")
    ax.set_title(title or "span boundaries: how another annotator marked each span")
    ax.legend(fontsize=7, loc="lower right")
    return ax
