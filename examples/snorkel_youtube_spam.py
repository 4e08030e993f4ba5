"""Snorkel's YouTube spam tutorial with CrowdLabelModel in place of Snorkel's LabelModel.

1. Write labeling functions with Snorkel's ``labeling_function`` (``youtube_spam_lfs.py``)
   and apply them with ``PandasLFApplier`` to get the label matrix ``L``.
2. Look at the functions: Snorkel's ``LFAnalysis`` needs gold labels for accuracy;
   ``lf_quality`` estimates it without them.
3. Compare majority vote, Snorkel's ``LabelModel`` and ``CrowdLabelModel`` on the gold
   ``CLASS`` of the test video.
4. Drop the comments no function labelled (``filter_unlabeled_dataframe``) and train an end
   model (logistic regression on n-grams) on each set of probabilistic labels.

Run from the repository root (about 10 s)::

    python examples/snorkel_youtube_spam.py [--data FOLDER]  # default: CROWD_KERAS_DATA, cache
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from youtube_spam_lfs import LFS, apply_lfs, load_youtube_spam  # noqa: E402

from crowd_keras import CrowdDataError  # noqa: E402
from crowd_keras.errors import DownloadError  # noqa: E402
from crowd_keras.datasets import locate  # noqa: E402
from crowd_keras.integrations.snorkel import CrowdLabelModel, lf_quality  # noqa: E402


def train_end_model(texts_train, probs_train, texts_test, y_test, seed: int = 0) -> float:
    """Logistic regression on 1-3-grams fitted to probabilistic labels; test accuracy.

    Soft labels enter as sample weights: every comment appears once per class, weighted
    by that class's probability.
    """
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = CountVectorizer(ngram_range=(1, 3))
    X = vectorizer.fit_transform(texts_train)
    n, k = probs_train.shape
    rows = np.tile(np.arange(n), k)
    labels = np.repeat(np.arange(k), n)
    weights = probs_train.T.ravel()
    keep = weights > 0
    clf = LogisticRegression(C=1.0, max_iter=1000, random_state=seed)
    clf.fit(X[rows[keep]], labels[keep], sample_weight=weights[keep])
    return float((clf.predict(vectorizer.transform(texts_test)) == y_test).mean())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None,
                        help="folder that holds youtube_spam/ (default: CROWD_KERAS_DATA, the "
                             "cache, or a download)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=FutureWarning)
    logging.getLogger().setLevel(logging.ERROR)  # Snorkel logs at INFO/WARNING

    from snorkel.labeling import LFAnalysis, filter_unlabeled_dataframe
    from snorkel.labeling.model import LabelModel, MajorityLabelVoter

    try:
        df_train, df_test = load_youtube_spam(locate("youtube_spam", args.data))
    except (CrowdDataError, FileNotFoundError) as exc:   # a --data folder without the set
        parser.error(str(exc))
    except DownloadError as exc:   # not on disk and not downloadable (offline, say): no usage
        parser.exit(1, f"{parser.prog}: error: {exc}\n")
    L_train, L_test = apply_lfs(df_train), apply_lfs(df_test)
    y_test = df_test.label.to_numpy()
    print(f"{len(LFS)} labeling functions, {len(df_train)} training comments (videos 1-4), "
          f"{len(df_test)} test comments (video 5)\n")

    crowd = CrowdLabelModel(cardinality=2)
    start = time.perf_counter()
    crowd.fit(L_train, n_epochs=500, seed=123, progress_bar=False)
    t_crowd = time.perf_counter() - start

    print("Labeling functions on the training comments (Emp. Acc. from gold, Est. Acc. without):")
    summary = LFAnalysis(L_train, LFS).lf_summary(df_train.label.to_numpy())
    quality = lf_quality(L_train, model=crowd, lfs=LFS)
    table = summary[["Polarity", "Coverage", "Conflicts", "Emp. Acc."]].join(quality["Est. Acc."])
    print(table.round(3).to_string(), "\n")

    snorkel = LabelModel(cardinality=2, verbose=False)
    start = time.perf_counter()
    snorkel.fit(L_train, n_epochs=500, log_freq=100, seed=123, progress_bar=False)
    t_snorkel = time.perf_counter() - start
    voter = MajorityLabelVoter(cardinality=2)

    # tie_break_policy="random": every model resolves a tie the same (deterministic) way
    print("Label models on the test comments (ties broken by Snorkel's 'random' policy):")
    models = {"majority vote": (voter, 0.0), "Snorkel LabelModel": (snorkel, t_snorkel),
              "CrowdLabelModel": (crowd, t_crowd)}
    for name, (model, seconds) in models.items():
        acc = model.score(L_test, y_test, tie_break_policy="random")["accuracy"]
        fit = f"  (fit {seconds * 1e3:.0f} ms)" if seconds else ""
        print(f"  {name:20s} accuracy {acc:.3f}{fit}")

    print("\nEnd model (logistic regression on 1-3-grams) trained on each model's labels:")
    for name, (model, _) in models.items():
        probs = model.predict_proba(L_train)
        df_filtered, probs_filtered = filter_unlabeled_dataframe(df_train, probs, L_train)
        acc = train_end_model(df_filtered.text.tolist(), probs_filtered,
                              df_test.text.tolist(), y_test)
        print(f"  {name:20s} {len(df_filtered)} labelled comments, test accuracy {acc:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
