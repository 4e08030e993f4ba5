"""Add a crowd layer to an existing Keras classifier and train it from raw LabelMe crowd labels.

The story, end to end:

1. a plain Keras classifier (MLP on the 512-d VGG16 features of LabelMe images);
2. wrap it: ``CrowdModel(classifier, CrowdLayer(n_annotators, "MW"))``;
3. ``fit(x, annotations)`` on the 2,547 raw labels of 59 Mechanical Turk workers (no
   aggregation step), keeping the epoch that scores best on the gold validation split;
4. ``classifier.predict`` is the truth estimate; compare with majority-vote training;
5. read what the layer learned about each annotator (confusion matrices, rows = true class);
6. save the crowd model as ``.keras`` and load it back.

Run from the repository root (LabelMe from ``CROWD_KERAS_DATA``, the cache or a download)::

    python examples/keras_crowd_layer.py               # 60 epochs, about a minute on a CPU
    python examples/keras_crowd_layer.py --quick       # 3 epochs: a smoke test
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crowd_keras.quiet import quiet_import  # noqa: E402

with quiet_import("--verbose" in sys.argv):  # TensorFlow's start-up notices, unless --verbose
    import keras  # noqa: E402

from crowd_keras import CrowdDataError  # noqa: E402
from crowd_keras.errors import DownloadError  # noqa: E402
from crowd_keras.aggregation import MajorityVote  # noqa: E402
from crowd_keras.callbacks import FitProgress  # noqa: E402
from crowd_keras.datasets import load_labelme  # noqa: E402
from crowd_keras.layers import CrowdLayer  # noqa: E402
from crowd_keras.models import CrowdModel, TruthValidation  # noqa: E402


def make_classifier(n_features: int, n_classes: int) -> keras.Model:
    """Any Keras model ending in a softmax will do; this one is the usual LabelMe MLP."""
    def dense(units, fan_in, activation):  # torch-style init: steadier crowd-layer training
        init = keras.initializers.RandomUniform(-fan_in ** -0.5, fan_in ** -0.5)
        return keras.layers.Dense(units, activation=activation, kernel_initializer=init,
                                  bias_initializer=init)
    return keras.Sequential([keras.Input((n_features,)), dense(128, n_features, "relu"),
                             keras.layers.Dropout(0.5), dense(n_classes, 128, "softmax")])


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=None,
                   help="folder that holds labelme/ (default: CROWD_KERAS_DATA, the cache, or "
                        "a download)")
    p.add_argument("--epochs", type=int, default=None,
                   help="training epochs of each model (default: 60, 3 with --quick)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    p.add_argument("--verbose", action="store_true",
                   help="show TensorFlow's start-up messages")
    p.add_argument("--quick", action="store_true", help="3 epochs (smoke test)")
    args = p.parse_args(argv)
    epochs = args.epochs if args.epochs is not None else 3 if args.quick else 60
    if epochs < 1:
        p.error(f"--epochs must be at least 1, got {epochs}")
    if not 0 <= args.seed < 2 ** 32:   # else a traceback from the seeding, after the data loaded
        p.error(f"--seed must be an integer from 0 to {2 ** 32 - 1}, got {args.seed}")

    try:
        data = load_labelme(args.data)
    except CrowdDataError as exc:   # a --data folder without LabelMe: one line, not a traceback
        p.error(str(exc))
    except DownloadError as exc:   # not on disk and not downloadable (offline, say): no usage
        p.exit(1, f"{p.prog}: error: {exc}\n")
    ann = data.annotations
    print(f"LabelMe: {ann.n_items} training images, {ann.n_annotators} annotators, "
          f"{ann.n_annotations} labels, {ann.n_classes} classes")

    # 1-3. the classifier, wrapped with a crowd layer, trained on the raw annotations
    keras.utils.set_random_seed(args.seed)
    classifier = make_classifier(data.x_train.shape[1], ann.n_classes)
    model = CrowdModel(classifier, CrowdLayer(ann.n_annotators, conn_type="MW"))
    model.compile(optimizer=keras.optimizers.Adam(1e-3))   # loss: MaskedMultiCrossEntropy
    select = TruthValidation(data.x_valid, data.y_valid)     # gold validation split, not test
    model.fit(data.x_train, ann, epochs=epochs, batch_size=64, verbose=0,
              callbacks=[select, FitProgress("training the crowd model")])

    # 4. the plain classifier is the truth estimate
    acc = float(np.mean(classifier.predict(data.x_test, verbose=0).argmax(-1) == data.y_test))

    keras.utils.set_random_seed(args.seed)
    baseline = make_classifier(data.x_train.shape[1], ann.n_classes)
    baseline.compile(keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy")
    mv_select = TruthValidation(data.x_valid, data.y_valid, classifier=baseline)
    baseline.fit(data.x_train, MajorityVote().fit(ann).predict(), epochs=epochs, batch_size=64,
                 verbose=0, callbacks=[mv_select, FitProgress("training on majority vote")])
    mv_acc = float(np.mean(baseline.predict(data.x_test, verbose=0).argmax(-1) == data.y_test))
    print(f"test accuracy: crowd layer (MW) {acc:.3f} (best epoch {select.best_epoch_ + 1}), "
          f"majority-vote labels {mv_acc:.3f}")

    # 5. what the layer learned about the annotators
    cm = model.confusion_matrices()                     # (annotators, classes, classes)
    learned = np.einsum("akk->a", cm) / ann.n_classes   # mean diagonal
    hits = ann.labels == data.y_train[ann.items]
    true_acc = np.bincount(ann.annotators, hits, ann.n_annotators) / np.maximum(
        ann.annotations_per_annotator(), 1)
    busy = np.argsort(-ann.annotations_per_annotator())[:5]
    print("busiest annotators: true accuracy vs learned mean diagonal")
    for r in busy:
        print(f"  annotator {ann.annotator_ids[r]!s:>4}: {true_acc[r]:.2f} vs {learned[r]:.2f} "
              f"({ann.annotations_per_annotator()[r]} labels)")
    many = ann.annotations_per_annotator() >= 20
    print(f"correlation over annotators with ≥ 20 labels: "
          f"{np.corrcoef(true_acc[many], learned[many])[0, 1]:.2f}")

    # 6. save and load the whole crowd model
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "labelme_crowd.keras"
        model.save(path)
        loaded = keras.models.load_model(path)
        same = np.allclose(loaded.classifier.predict(data.x_test, verbose=0),
                           classifier.predict(data.x_test, verbose=0), atol=1e-6)
    print(f"saved and reloaded {path.name}: same predictions = {same}")
    return {"crowd_layer": acc, "majority_vote": mv_acc}


if __name__ == "__main__":
    main()
