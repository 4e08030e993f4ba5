"""Loaders for the public crowdsourcing data layouts (read-only, folder given by the caller)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Union

import numpy as np
import pandas as pd

from ..annotations import Annotations
from ..errors import CrowdDataError
from ..files import read_json_text, read_npy, read_npz

__all__ = ["CrowdDataset", "load_labelme", "load_music", "load_truth_inference",
           "load_truth_inference_features", "load_wrench"]

PathLike = Union[str, Path]


class CrowdDataset(dict):
    """A dict with attribute access (like scikit-learn's ``Bunch``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _folder(root: PathLike, name: str, marker: str) -> Path:
    """Accept the set's own folder or the shared data folder that contains it."""
    root = Path(root)
    for cand in (root, root / name):
        if (cand / marker).exists():
            return cand
    raise CrowdDataError(f"no {name} data at {root} (looked for {marker})")


def _integer_table(path: Path) -> np.ndarray:
    """``np.loadtxt(path, dtype=int64)``; an unreadable value raises naming the file."""
    try:
        return np.loadtxt(path, dtype=np.int64)
    except ValueError as exc:
        raise CrowdDataError(f"{path}: not a table of integers ({exc})") from None


def load_labelme(root: PathLike) -> CrowdDataset:
    """LabelMe as prepared by Rodrigues & Pereira (2018), with 512-d VGG16 pooled features.

    Returns a :class:`CrowdDataset` with ``x_train, y_train, x_valid, y_valid, x_test,
    y_test`` (features float32, truth int64), ``annotations`` (1000 train items × 59
    annotators, -1 in ``answers.txt`` = not labelled) and ``classes``.
    """
    d = _folder(root, "labelme", "answers.txt")
    classes = [c.strip() for c in (d / "classes.txt").read_text().split("\n") if c.strip()]
    out = CrowdDataset(classes=classes)
    for split in ("train", "valid", "test"):
        out[f"x_{split}"] = read_npy(d / f"LabelMe_VGG_avg_{split}.npy").astype(np.float32)
        out[f"y_{split}"] = _integer_table(d / f"LabelMe_Z_{split}.txt")
    answers = _integer_table(d / "answers.txt")
    out["annotations"] = Annotations.from_dense(answers, missing=-1, classes=classes)
    return out


def load_music(root: PathLike) -> CrowdDataset:
    """Music genre (Rodrigues et al. 2014): 700 train songs with AMT labels, 300 test songs.

    Items follow the order of ``music_genre_gold.csv``; ``x_*`` are the 124 Marsyas features.
    """
    d = _folder(root, "music", "music_genre_annotations.csv")
    gold = pd.read_csv(d / "music_genre_gold.csv")
    test = pd.read_csv(d / "music_genre_test.csv")
    answers = pd.read_csv(d / "music_genre_annotations.csv")
    feats = [c for c in gold.columns if c.startswith("feature")]
    classes = sorted(set(gold["class"]) | set(test["class"]) | set(answers["label"]))
    code = {c: i for i, c in enumerate(classes)}
    ann = Annotations.from_frame(answers, item="id", annotator="annotator", label="label",
                                 classes=classes, item_ids=gold["id"].tolist())
    return CrowdDataset(
        x_train=gold[feats].to_numpy(np.float32), y_train=gold["class"].map(code).to_numpy(np.int64),
        x_test=test[feats].to_numpy(np.float32), y_test=test["class"].map(code).to_numpy(np.int64),
        annotations=ann, classes=classes)


def load_truth_inference(folder: PathLike) -> tuple[Annotations, np.ndarray]:
    """A set of the truth-inference benchmark (Zheng et al. 2017): ``answer.csv`` + ``truth.csv``.

    Returns ``(annotations, truth)`` with ``truth`` aligned to ``annotations.item_ids``
    (-1 where the item has no known truth). Items that appear only in ``truth.csv`` are
    kept as items without annotations.
    """
    d = Path(folder)
    if not (d / "answer.csv").exists():
        raise CrowdDataError(f"no answer.csv in {d}")
    answers = pd.read_csv(d / "answer.csv")
    truth = pd.read_csv(d / "truth.csv") if (d / "truth.csv").exists() else None
    items = pd.unique(pd.concat([answers["question"]] + ([truth["question"]] if truth is not None
                                                          else [])))
    items = np.sort(items)
    n_classes = int(max(answers["answer"].max(), truth["truth"].max() if truth is not None else 0)) + 1
    ann = Annotations.from_frame(answers, item="question", annotator="worker", label="answer",
                                 classes=list(range(n_classes)), item_ids=list(items))
    y = np.full(ann.n_items, -1, dtype=np.int64)
    if truth is not None:
        y[ann.item_index(truth["question"])] = truth["truth"].to_numpy(np.int64)
    return ann, y


def load_truth_inference_features(folder: PathLike, item_ids: Any) -> np.ndarray:
    """Instance features from ``vgg16_features.npz`` (bluebirds), rows in ``item_ids`` order."""
    path = Path(folder) / "vgg16_features.npz"
    if not path.exists():
        raise CrowdDataError(f"no features file at {path}")
    npz = read_npz(path, "a features file")
    missing = [name for name in ("ids", "features") if name not in npz]
    if missing:
        raise CrowdDataError(f"{path} has no {missing} entries (entries: {sorted(npz)})")
    ids, feats = npz["ids"], npz["features"]
    if feats.ndim != 2 or len(feats) != len(ids):
        raise CrowdDataError(f"{path}: features of shape {feats.shape} for {len(ids)} ids")
    pos = pd.Index(ids).get_indexer(list(item_ids))
    if (pos < 0).any():
        raise CrowdDataError(f"item {list(item_ids)[int(np.argmax(pos < 0))]!r} has no features in {path}")
    return feats[pos].astype(np.float32)


def load_wrench(folder: PathLike, split: str = "train") -> CrowdDataset:
    """A WRENCH weak-supervision split: label matrix ``L`` (-1 = abstain), gold ``y``, ``texts``."""
    d = Path(folder)
    path = d / f"{split}.json"
    if not path.exists():
        raise CrowdDataError(f"no WRENCH split at {path}")
    records = read_json_text(path.read_bytes(), path, "a WRENCH split")
    if not isinstance(records, dict) or not all(
            isinstance(r, dict) and "weak_labels" in r and "label" in r for r in records.values()):
        raise CrowdDataError(f"{path}: a WRENCH split maps ids to records holding "
                             "'weak_labels' and 'label'")
    rows = list(records.values())
    try:
        L = np.array([r["weak_labels"] for r in rows], dtype=np.int64)
        y = np.array([r["label"] for r in rows], dtype=np.int64)
    except (TypeError, ValueError) as exc:
        raise CrowdDataError(f"{path}: weak_labels and label must be integers, one list of "
                             f"one length per record ({exc})") from None
    label_path = d / "label.json"
    labels = read_json_text(label_path.read_bytes(), label_path, "the class names") \
        if label_path.exists() else None
    try:
        classes = [labels[k] for k in sorted(labels, key=int)] if labels else None
    except (TypeError, ValueError, AttributeError):
        raise CrowdDataError(f"{label_path}: must map class codes ('0', '1', ...) to "
                             "names") from None
    return CrowdDataset(L=L, y=y, texts=[r.get("data", {}).get("text", "") if isinstance(
                            r.get("data"), dict) else "" for r in rows],
                        ids=list(records.keys()), classes=classes)
