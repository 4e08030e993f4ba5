"""Loaders for the public crowdsourcing data sets.

Each loader takes its files from the folder it is given, else from ``$CROWD_KERAS_DATA``, else
from the user cache, else downloads them once into that cache from the set's public source
with pinned checksums (:mod:`crowd_keras.datasets.fetch`; ``download=False`` forbids it).
The sha256 checksums pin the files as distributed by this project's data layout (the same
files as the sources serve, where a source serves them as they are).
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional, Union

import numpy as np
import pandas as pd

from ..annotations import Annotations
from ..arguments import check_switch
from ..codes import label_matrix_problem, show
from ..errors import CrowdDataError, Message
from ..files import read_json_text, read_npy, read_npz
from .fetch import locate

__all__ = ["CrowdDataset", "load_labelme", "load_music", "load_truth_inference",
           "load_truth_inference_features", "load_wrench", "TRUTH_INFERENCE_SETS",
           "WRENCH_SETS", "LABELME_CLASSES"]

PathLike = Union[str, Path]

#: The truth-inference sets by name (``load_truth_inference("dog")``).
TRUTH_INFERENCE_SETS = ("bluebirds", "product", "dog", "adult_content", "weather_sentiment")
#: The WRENCH sets by name (``load_wrench("youtube")``).
WRENCH_SETS = ("youtube", "sms", "trec")
_WRENCH_SPLITS = ("train", "valid", "test")
#: LabelMe's classes in code order (``classes.txt`` of the prepared set).
LABELME_CLASSES = ("highway", "insidecity", "tallbuilding", "street", "forest", "coast",
                   "mountain", "opencountry")


class CrowdDataset(dict):
    """A dict with attribute access (like scikit-learn's ``Bunch``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@contextmanager
def _naming(path: Path) -> Iterator[None]:
    """Prefix ``path`` to a :class:`CrowdDataError` raised inside, keeping a
    :class:`~crowd_keras.errors.Message`'s arguments for the command lines."""
    try:
        yield
    except CrowdDataError as exc:
        text = exc.args[0] if exc.args else ""
        raise CrowdDataError(Message("{path}: " + text.template, path=str(path), **text.fields)
                             if isinstance(text, Message) else f"{path}: {text}") from None


def _integer_table(path: Path, ndim: int) -> np.ndarray:
    """The integer table of ``path`` with ``ndim`` dimensions (1: one code per row, a one-row
    file included); an unreadable or fractional value, or another column count, raises naming
    the file (and the line of a fractional value)."""
    try:   # read as floats: numpy's integer reading truncates 4.9 to 4 with a hidden warning
        table = np.loadtxt(path, dtype=np.float64, encoding="utf-8-sig", ndmin=ndim,
                           comments=None)
    except ValueError as exc:
        raise CrowdDataError(f"{path}: not a table of integers ({exc})") from None
    if table.ndim != ndim:  # two columns in a codes file would pass as a (n, 2) y
        raise CrowdDataError(f"{path}: {table.shape[1]} columns; one class code per row")
    whole = np.isfinite(table) & (table == np.round(table))
    if not whole.all():
        row = int(np.argwhere(~whole)[0][0])
        value = table.reshape(len(table), -1)[row][~whole.reshape(len(table), -1)[row]][0]
        raise CrowdDataError(f"{path}, line {row + 1}: {float(value)!r} is not an integer code")
    return table.astype(np.int64)


def _check_rows(path: Path, table: np.ndarray, other: Path, n_rows: int) -> None:
    """Row i of ``path`` and of ``other`` are the same item: a row count that differs would
    shift every item after a missing row."""
    if len(table) != n_rows:
        raise CrowdDataError(f"{path} has {len(table)} rows but {other} has {n_rows}: the files "
                             "describe the same items row by row")


def _check_features(path: Path, x: np.ndarray, train: np.ndarray, train_path: Path) -> None:
    """``x`` is (items, features) with the training split's width, every value finite: another
    shape would reach a classifier as other inputs than those it was trained on."""
    if x.ndim != 2:
        raise CrowdDataError(f"{path}: features of shape {x.shape}; expected a 2-d array "
                             "(items, features)")
    if x.shape[1] != train.shape[1]:
        raise CrowdDataError(f"{path}: {x.shape[1]} features per item, but {train_path} has "
                             f"{train.shape[1]}")
    if not np.isfinite(x).all():   # a NaN would reach training unseen
        r, c = (int(i) for i in np.argwhere(~np.isfinite(x))[0])
        raise CrowdDataError(f"{path}: row {r}, feature {c} is {show(x[r, c])}, not a finite "
                             "number")


def _check_codes(path: Path, codes: np.ndarray, classes: list,
                 named_in: Optional[Path] = None) -> None:
    """Codes in 0..K-1; ``named_in``: the file the K classes come from, named beside the
    code (a truncated class list is the fault then, not the codes file)."""
    bad = (codes < 0) | (codes >= len(classes))
    if bad.any():
        n = int(np.argmax(bad))
        raise CrowdDataError(f"{path}, row {n}: class code {int(codes[n])} is not one of "
                             f"0..{len(classes) - 1} ({len(classes)} classes"
                             f"{f' in {named_in}' if named_in is not None else ''})")


def load_labelme(root: Optional[PathLike] = None, *, download: bool = True) -> CrowdDataset:
    """LabelMe as prepared by Rodrigues & Pereira (2018), with 512-d VGG16 pooled features.

    Args:
        root: the ``labelme`` folder or a data folder that holds it; ``None``:
            ``$CROWD_KERAS_DATA``, the cache, or a download (about 5 MB).
        download: ``False``: raise instead of downloading.

    Returns a :class:`CrowdDataset` with ``x_train, y_train, x_valid, y_valid, x_test,
    y_test`` (features float32, truth int64), ``annotations`` (1000 train items × 59
    annotators, -1 in ``answers.txt`` = not labelled) and ``classes``.

    Source: the files of the PyLearningCrowds repository (Mena et al.,
    github.com/fmenat/PyLearningCrowds, ``data/LabelMe`` at a fixed commit): the Amazon
    Mechanical Turk labels collected by Rodrigues & Pereira and global-average-pooled VGG16
    features of the LabelMe images (Russell et al. 2008). Licence: none is stated by the
    distributors; the labels are shared for research, the images are LabelMe's (free for
    research). Cite: F. Rodrigues and F. Pereira, "Deep learning from crowds", AAAI 2018;
    B. Russell, A. Torralba, K. Murphy, W. Freeman, "LabelMe: a database and web-based tool for
    image annotation", IJCV 77, 2008.
    """
    d = locate("labelme", root, download=download)
    listed = d / "classes.txt" if (d / "classes.txt").exists() else None
    # utf-8-sig: a byte-order mark would otherwise stick to the first class name
    names = (listed.read_text(encoding="utf-8-sig").split("\n") if listed is not None
             else LABELME_CLASSES)
    classes = [c.strip() for c in names if c.strip()]
    if not classes:   # else "class code 3 is not one of 0..-1", blamed on LabelMe_Z_train.txt
        raise CrowdDataError(f"{listed}: no class names (one per line, in code order)")
    repeat = pd.Index(classes).duplicated()
    if repeat.any():  # else blamed on answers.txt by from_dense
        raise CrowdDataError(f"{d / 'classes.txt'}: class {classes[int(np.argmax(repeat))]!r} "
                             "is named twice")
    out = CrowdDataset(classes=classes)
    for split in ("train", "valid", "test"):
        out[f"x_{split}"] = read_npy(d / f"LabelMe_VGG_avg_{split}.npy").astype(np.float32)
        _check_features(d / f"LabelMe_VGG_avg_{split}.npy", out[f"x_{split}"], out["x_train"],
                        d / "LabelMe_VGG_avg_train.npy")
        out[f"y_{split}"] = _integer_table(d / f"LabelMe_Z_{split}.txt", 1)
        _check_rows(d / f"LabelMe_Z_{split}.txt", out[f"y_{split}"],
                    d / f"LabelMe_VGG_avg_{split}.npy", len(out[f"x_{split}"]))
        _check_codes(d / f"LabelMe_Z_{split}.txt", out[f"y_{split}"], classes, listed)
    answers = _integer_table(d / "answers.txt", 2)
    _check_rows(d / "answers.txt", answers, d / "LabelMe_VGG_avg_train.npy", len(out.x_train))
    with _naming(d / "answers.txt"):
        out["annotations"] = Annotations.from_dense(answers, missing=-1, classes=classes)
    return out


def load_music(root: Optional[PathLike] = None, *, download: bool = True,
               duplicates: str = "error") -> CrowdDataset:
    """Music genre (Rodrigues et al. 2014): 700 train songs with AMT labels, 300 test songs.

    Items follow the order of ``music_genre_gold.csv``; ``x_*`` are the 124 Marsyas features.
    ``root`` and ``download`` as in :func:`load_labelme`; ``duplicates`` (a worker's
    repeated labels of one song) as in :func:`load_truth_inference`.

    Source: ``mturk-datasets.tar.gz`` on fprodrigues.com (members
    ``music_genre_classification/music_genre_{mturk,gold,test}.csv``; the crowd file is read
    as ``music_genre_annotations.csv``), clips of the GTZAN collection (Tzanetakis & Cook
    2002). Licence: none is stated by the distributor; shared for research. Cite:
    F. Rodrigues, F. Pereira, B. Ribeiro, "Gaussian process classification and active
    learning with multiple annotators", ICML 2014.
    """
    d = locate("music", root, download=download)
    gold = _csv_columns(d / "music_genre_gold.csv", ("id", "class"))
    feats = [c for c in gold.columns if c.startswith("feature")]
    test = _csv_columns(d / "music_genre_test.csv", ("class", *feats))
    answers = _csv_columns(d / "music_genre_annotations.csv", ("id", "annotator", "label"))
    x_train = _feature_table(gold, feats, d / "music_genre_gold.csv")
    x_test = _feature_table(test, feats, d / "music_genre_test.csv")
    if gold["id"].isna().any():  # else blamed on the annotations file, as repeats would be
        raise CrowdDataError(f"{d / 'music_genre_gold.csv'}, row "
                             f"{int(np.argmax(gold['id'].isna().to_numpy()))}: no song id")
    repeat = gold["id"].duplicated().to_numpy()
    if repeat.any():  # else blamed on the annotations file by from_frame's item_ids check
        n = int(np.argmax(repeat))
        raise CrowdDataError(f"{d / 'music_genre_gold.csv'}, row {n}: song "
                             f"{show(gold['id'].iloc[n])} repeats row "
                             f"{int(np.argmax((gold['id'] == gold['id'].iloc[n]).to_numpy()))}")
    # the genres are those of the 700 gold songs: a label outside them is refused below
    # (from_frame names its row), not made a class of its own
    if gold["class"].isna().any():
        raise CrowdDataError(f"{d / 'music_genre_gold.csv'}, row "
                             f"{int(np.argmax(gold['class'].isna().to_numpy()))}: no class")
    classes = sorted(set(gold["class"]))
    code = {c: i for i, c in enumerate(classes)}
    unknown = ~test["class"].isin(classes).to_numpy()
    if unknown.any():
        n = int(np.argmax(unknown))
        raise CrowdDataError(f"{d / 'music_genre_test.csv'}, row {n}: class "
                             f"{show(test['class'].iloc[n])} is not one of the genres of "
                             f"music_genre_gold.csv {classes}")
    with _naming(d / "music_genre_annotations.csv"):
        ann = Annotations.from_frame(answers, item="id", annotator="annotator", label="label",
                                     classes=classes, item_ids=gold["id"].tolist(),
                                     duplicates=duplicates)
    return CrowdDataset(
        x_train=x_train, y_train=gold["class"].map(code).to_numpy(np.int64),
        x_test=x_test, y_test=test["class"].map(code).to_numpy(np.int64),
        annotations=ann, classes=classes)


def _feature_table(frame: pd.DataFrame, feats: list, path: Path) -> np.ndarray:
    """``frame[feats]`` as float32 (rows, features); a value that is not a finite number
    raises naming the row and column (a NaN would reach training unseen)."""
    values = frame[feats].apply(pd.to_numeric, errors="coerce").to_numpy(np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        r, c = (int(i) for i in np.argwhere(bad)[0])
        raise CrowdDataError(f"{path}, row {r}, column {feats[c]!r}: "
                             f"{show(frame[feats[c]].iloc[r])} is not a finite number")
    return values.astype(np.float32)


def _named_set(folder: PathLike, family: str, names: tuple, files: list,
               download: bool) -> Optional[Path]:
    """The located folder when ``folder`` is a set's name (and not an existing folder)."""
    check_switch(download, "download")   # checked for a folder too, as locate does for a name
    if isinstance(folder, str) and folder in names and not Path(folder).is_dir():
        return locate(f"{family}/{folder}", files=files, download=download)
    return None


def _no_folder(folder: PathLike, names: tuple) -> str:
    """What ``folder`` is not, when it does not exist (a mistyped set name, usually)."""
    if Path(folder).is_dir():
        return ""
    if str(folder) in names:   # a Path: it read "'dog' is neither ... nor one of [..., 'dog']"
        return (f" (no such folder; the set {str(folder)!r} is named by a string, "
                f"{str(folder)!r}, not a Path)")
    return f" ({str(folder)!r} is neither a folder nor one of the sets {list(names)})"


def load_truth_inference(folder: PathLike, *, download: bool = True,
                         duplicates: str = "error") -> tuple[Annotations, np.ndarray]:
    """A set of the truth-inference benchmark (Zheng et al. 2017): ``answer.csv`` + ``truth.csv``.

    Args:
        folder: a folder with ``answer.csv`` (and ``truth.csv``), or the name of a set in
            :data:`TRUTH_INFERENCE_SETS` (``"dog"``): then ``$CROWD_KERAS_DATA``, the cache or
            a download (less than 1 MB each, ``adult_content`` 1 MB).
        download: ``False``: raise instead of downloading.
        duplicates: a worker's repeated answers to one question (``adult_content`` has 2,922):
            ``"error"`` (default) refuses them, ``"last"`` / ``"first"`` keep one and count
            the rest in ``annotations.n_duplicates`` (:meth:`Annotations.from_frame`).

    Returns ``(annotations, truth)`` with ``truth`` aligned to ``annotations.item_ids``
    (-1 where the item has no known truth). Items that appear only in ``truth.csv`` are
    kept as items without annotations. A ``truth.csv`` row that is not an integer code
    (-1 = unknown) or repeats a question raises :class:`CrowdDataError` naming the row.

    Source: the survey's repository (github.com/zhydhkcws/crowd_truth_infer, at a fixed
    commit): ``bluebirds`` is its "Duck Identification" (Welinder et al. 2010), ``product``
    its "jn-product" (Wang et al. 2012), ``dog`` its "Dog data" (Zhou et al. 2012);
    ``adult_content`` (Ipeirotis et al. 2010) and ``weather_sentiment`` are rewrites of the
    same collections into this layout, served by ``$CROWD_KERAS_DATA`` or a mirror only.
    Licence: none is stated by the repository; shared for research. Cite: Y. Zheng, G. Li,
    Y. Li, C. Shan, R. Cheng, "Truth inference in crowdsourcing: is the problem solved?",
    VLDB 2017, and the set's own paper.
    """
    named = _named_set(folder, "truth_inference", TRUTH_INFERENCE_SETS,
                       ["answer.csv", "truth.csv"], download)
    d = named if named is not None else Path(folder).expanduser()
    if not (d / "answer.csv").exists():
        raise CrowdDataError(f"no answer.csv in {d}{_no_folder(d, TRUTH_INFERENCE_SETS)}")
    answers = _csv_columns(d / "answer.csv", ("question", "worker", "answer"))
    if answers.empty:   # else a crowd of no items, without a word
        raise CrowdDataError(f"{d / 'answer.csv'}: a header and no answers")
    truth = (_truth_codes(_csv_columns(d / "truth.csv", ("question", "truth")), d / "truth.csv")
             if (d / "truth.csv").exists() else None)
    items = pd.unique(pd.concat([answers["question"]] + ([truth["question"]] if truth is not None
                                                          else [])))
    items = items[pd.notna(items)]  # a missing question is from_frame's error, naming its row
    try:
        items = np.sort(items)
    except TypeError:  # ids read as text in one file and as numbers in the other
        if truth is None:
            raise
        raise CrowdDataError(
            f"{d / 'truth.csv'}: its questions (such as {show(truth['question'].iloc[0])}, "
            f"{truth['question'].dtype}) and those of {d / 'answer.csv'} (such as "
            f"{show(answers['question'].iloc[0])}, {answers['question'].dtype}) are not the "
            "same kind of id") from None
    numeric = pd.to_numeric(answers["answer"], errors="coerce")
    text = (numeric.isna() & answers["answer"].notna()).to_numpy()
    if text.any():   # else the column is read as text and its first (numeric) row is blamed
        n = int(np.argmax(text))
        raise CrowdDataError(f"{d / 'answer.csv'}, row {n}: answer "
                             f"{show(answers['answer'].iloc[n])} of question "
                             f"{show(answers['question'].iloc[n])} is not a class code")
    top = numeric.max()
    n_classes = int(max(top if np.isfinite(top) else 0,
                        truth["truth"].max() if truth is not None else 0)) + 1
    with _naming(d / "answer.csv"):
        ann = Annotations.from_frame(answers, item="question", annotator="worker",
                                     label="answer", classes=list(range(n_classes)),
                                     item_ids=list(items), duplicates=duplicates)
    y = np.full(ann.n_items, -1, dtype=np.int64)
    if truth is not None:
        y[ann.item_index(truth["question"])] = truth["truth"].to_numpy(np.int64)
    return ann, y


def _csv_columns(path: Path, columns: tuple) -> pd.DataFrame:
    """``path`` read by pandas; a missing column raises naming the file."""
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise CrowdDataError(f"{path}: not a CSV table ({str(exc).strip()})") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise CrowdDataError(f"{path}: no column(s) {missing}; its columns are "
                             f"{list(frame.columns)}, expected {list(columns)}")
    return frame


def _truth_codes(truth: pd.DataFrame, path: Path) -> pd.DataFrame:
    """``truth`` with integer codes >= -1 and one row per question, else raise naming the row
    (a NaN or fraction would otherwise become a wrong code, a repeat overwrite silently)."""
    if truth["question"].isna().any():  # else "unknown item id nan", naming no file
        n = int(np.argmax(truth["question"].isna().to_numpy()))
        raise CrowdDataError(f"{path}, row {n}: no question (truth {show(truth['truth'].iloc[n])})")
    codes = pd.to_numeric(truth["truth"], errors="coerce")
    bad = (codes.isna() | (codes != codes.round()) | (codes < -1)).to_numpy()
    if bad.any():
        n = int(np.argmax(bad))
        raise CrowdDataError(f"{path}, row {n}: truth {show(truth['truth'].iloc[n])} of question "
                             f"{show(truth['question'].iloc[n])} is not a class code (an integer "
                             "from 0; -1 = unknown)")
    repeat = truth["question"].duplicated().to_numpy()
    if repeat.any():
        n = int(np.argmax(repeat))
        q = truth["question"].iloc[n]
        first = int(np.argmax((truth["question"] == q).to_numpy()))
        raise CrowdDataError(f"{path}: question {show(q)} has truth at row {first} and row {n} "
                             f"({int(repeat.sum())} repeated question(s)); one row per question")
    return truth.assign(truth=codes.astype(np.int64))


def load_truth_inference_features(folder: PathLike, item_ids: Any, *,
                                  download: bool = True) -> np.ndarray:
    """Instance features from ``vgg16_features.npz`` (bluebirds), rows in ``item_ids`` order.

    ``folder``: the set's folder or its name (``"bluebirds"``). The features are the VGG16
    image features of the LIA authors' public code, rewritten to one ``.npz``: they come from
    ``$CROWD_KERAS_DATA`` or a mirror (``$CROWD_KERAS_MIRROR``), not from a public URL.
    """
    named = _named_set(folder, "truth_inference", TRUTH_INFERENCE_SETS,
                       ["vgg16_features.npz"], download)
    path = (named if named is not None else Path(folder).expanduser()) / "vgg16_features.npz"
    if not path.exists():
        raise CrowdDataError(f"no features file at {path}"
                             f"{_no_folder(path.parent, TRUTH_INFERENCE_SETS)}")
    npz = read_npz(path, "a features file")
    missing = [name for name in ("ids", "features") if name not in npz]
    if missing:
        raise CrowdDataError(f"{path} has no {missing} entries (entries: {sorted(npz)})")
    ids, feats = npz["ids"], npz["features"]
    if feats.ndim != 2 or len(feats) != len(ids):
        raise CrowdDataError(f"{path}: features of shape {feats.shape} for {len(ids)} ids")
    repeat = pd.Index(ids).duplicated()
    if repeat.any():
        raise CrowdDataError(f"{path}: id {show(ids[int(np.argmax(repeat))])} has two rows of "
                             "features")
    pos = pd.Index(ids).get_indexer(list(item_ids))
    if (pos < 0).any():
        raise CrowdDataError(f"item {show(list(item_ids)[int(np.argmax(pos < 0))])} has no "
                             f"features in {path}")
    out = feats[pos].astype(np.float32)
    if not np.isfinite(out).all():  # a NaN would reach training unseen
        r, c = (int(i) for i in np.argwhere(~np.isfinite(out))[0])
        raise CrowdDataError(f"{path}: feature {c} of id {show(ids[pos[r]])} is "
                             f"{show(out[r, c])}, not a finite number")
    return out


def load_wrench(folder: PathLike, split: str = "train", *, download: bool = True
                ) -> CrowdDataset:
    """A WRENCH weak-supervision split: label matrix ``L`` (-1 = abstain), gold ``y``, ``texts``.

    Args:
        folder: a folder with ``{split}.json`` and ``label.json``, or the name of a set in
            :data:`WRENCH_SETS` (``"youtube"``): then ``$CROWD_KERAS_DATA``, the cache or a
            download (youtube 0.4 MB, sms and trec 2.4 MB).
        split: ``"train"``, ``"valid"`` or ``"test"``.
        download: ``False``: raise instead of downloading.

    Returns a :class:`CrowdDataset` with ``L`` (records, functions) int64, ``y`` (records,)
    int64 (-1: no gold), ``texts``, ``ids`` (the records' keys) and ``classes`` (from
    ``label.json``, else None). A vote or gold label that is not an integer code -1..K-1 of
    ``label.json``'s K classes raises :class:`CrowdDataError` naming the record.

    Source: the WRENCH release (github.com/JieyuZ2/wrench), as vendored by a public research
    repository (github.com/JerrryNie/DyGen, ``datasets/``, at a fixed commit). Licence: the
    WRENCH code is Apache-2.0; each set keeps its origin's terms (youtube: TubeSpam, UCI,
    CC BY 4.0; sms: SMS Spam Collection, UCI, CC BY 4.0; trec: Li & Roth 2002). Cite:
    J. Zhang, Y. Yu, Y. Li, Y. Wang, Y. Yang, M. Yang, A. Ratner, "WRENCH: a comprehensive
    benchmark for weak supervision", NeurIPS 2021 Datasets and Benchmarks.
    """
    if (isinstance(folder, str) and folder in WRENCH_SETS and not Path(folder).is_dir()
            and split not in _WRENCH_SPLITS):  # else "has no file(s) ['dev.json']"
        raise ValueError(f"unknown WRENCH split {split!r}; splits are {_WRENCH_SPLITS}")
    named = _named_set(folder, "wrench", WRENCH_SETS, [f"{split}.json", "label.json"],
                       download)
    d = named if named is not None else Path(folder).expanduser()
    path = d / f"{split}.json"
    if not path.exists():
        raise CrowdDataError(f"no WRENCH split at {path}{_no_folder(d, WRENCH_SETS)}")
    records = read_json_text(path.read_bytes(), path, "a WRENCH split")
    if not isinstance(records, dict) or not all(
            isinstance(r, dict) and "weak_labels" in r and "label" in r for r in records.values()):
        raise CrowdDataError(f"{path}: a WRENCH split maps ids to records holding "
                             "'weak_labels' and 'label'")
    rows = list(records.values())
    if not rows:   # else L of shape (0,), not (0, functions): a split of nothing
        raise CrowdDataError(f"{path}: a WRENCH split with no records")
    try:
        # no dtype here: a cast would turn 0.5 into 0 and "1" into 1 without a word
        L = np.array([r["weak_labels"] for r in rows])
        y = np.array([r["label"] for r in rows])
    except (TypeError, ValueError):
        L = y = None
    # numpy reads [true, 1] as [1, 1]: a bool beside integers is found only value by value
    mixed_bool = L is not None and L.dtype.kind in "iuf" and (
        any(type(r["label"]) is bool for r in rows)
        or any(type(v) is bool for r in rows for v in r["weak_labels"]))
    if (mixed_bool or L is None or L.ndim != 2 or L.dtype.kind not in "iuf" or y.ndim != 1
            or y.dtype.kind not in "iuf"):
        # a list as label would be read as a column of y, a bool as a code
        raise CrowdDataError(_first_bad_record(path, records))
    label_path = d / "label.json"
    labels = read_json_text(label_path.read_bytes(), label_path, "the class names") \
        if label_path.exists() else None
    try:
        classes = [labels[k] for k in sorted(labels, key=int)] if labels else None
        if classes is not None and sorted(map(int, labels)) != list(range(len(classes))):
            raise ValueError
    except (TypeError, ValueError, AttributeError):
        raise CrowdDataError(f"{label_path}: must map class codes ('0', '1', ...) to "
                             "names") from None
    if classes is not None and len(set(classes)) < len(classes):
        raise CrowdDataError(f"{label_path}: class names {classes} repeat a name")
    ids = list(records.keys())
    L = _wrench_codes(L, path, ids, "weak_labels", classes)
    y = _wrench_codes(y[:, None], path, ids, "label", classes)[:, 0]
    return CrowdDataset(L=L, y=y, texts=[r.get("data", {}).get("text", "") if isinstance(
                            r.get("data"), dict) else "" for r in rows],
                        ids=ids, classes=classes)


def _is_code(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _first_bad_record(path: Path, records: dict) -> str:
    """Where a WRENCH split stops being one list of number codes of one length per record
    and one number label, searched only once the arrays showed that something is wrong."""
    first = None
    for key, rec in records.items():
        votes, label = rec["weak_labels"], rec["label"]
        if not isinstance(votes, list) or not all(_is_code(v) for v in votes):
            return (f"{path}: record {key!r}: weak_labels {show(votes)} is not a list of "
                    "integer codes (-1 = abstain)")
        if first is None:
            first = key, len(votes)
        elif len(votes) != first[1]:
            return (f"{path}: record {key!r} has {len(votes)} weak_labels, record "
                    f"{first[0]!r} has {first[1]}: one per labeling function")
        if not _is_code(label):
            return (f"{path}: record {key!r}: label {show(label)} is not an integer code "
                    "(-1 = no gold)")
    return (f"{path}: weak_labels and label must be integer codes, one list of one length "
            "per record")


def _wrench_codes(values: np.ndarray, path: Path, ids: list, what: str,
                  classes: Optional[list]) -> np.ndarray:
    """``values`` (records, columns) as int64 codes -1..K-1 (K: ``classes``, else any code
    >= 0), else raise naming the record and the value."""
    if values.size == 0:
        return values.astype(np.int64)
    if values.dtype.kind not in "iuf":
        raise CrowdDataError(f"{path}: {what} must be integer codes, got {values.dtype} "
                             f"values such as {show(values.flat[0])}")
    bad = label_matrix_problem(values, len(classes) if classes is not None else np.inf)
    if bad is not None:
        reason, r, c, value = bad
        column = f", function {c}" if what == "weak_labels" else ""
        allowed = (f"codes 0..{len(classes) - 1} of the classes {classes}" if classes is not None
                   else "codes from 0")
        raise CrowdDataError(f"{path}: record {ids[r]!r}{column}: {what} {show(value)} is not "
                             f"-1 (abstain / unknown) or one of the {allowed}")
    return values.astype(np.int64)
