"""Add CoNAL (common + individual noise) on top of an existing Keras classifier.

The story: you have a Keras classifier and labels from many annotators who share some
confusions. Wrap the classifier in a ``CrowdModel`` with a ``CommonNoiseAdaptation`` layer
gated by an ``AnnotatorGate``, train on the raw annotations, then use the classifier alone.

    python examples/keras_conal.py                 # a simulated crowd with common confusion
    python examples/keras_conal.py --labelme       # LabelMe (CROWD_KERAS_DATA, cache or download)
    python examples/keras_conal.py --epochs 2      # quick smoke run
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # the repository's crowd_keras, installed or not

from crowd_keras.quiet import quiet_import  # noqa: E402

with quiet_import("--verbose" in sys.argv):  # TensorFlow's start-up notices, unless --verbose
    import keras  # noqa: E402
import numpy as np  # noqa: E402

from crowd_keras import CrowdDataError  # noqa: E402
from crowd_keras.errors import DownloadError  # noqa: E402
from crowd_keras.aggregation import MajorityVote  # noqa: E402
from crowd_keras.callbacks import FitProgress  # noqa: E402
from crowd_keras.datasets import load_labelme, simulate_crowd  # noqa: E402
from crowd_keras.layers import AnnotatorGate, CommonNoiseAdaptation  # noqa: E402
from crowd_keras.models import CrowdModel, TruthValidation  # noqa: E402


def existing_classifier(n_features: int, n_classes: int) -> keras.Model:
    """Stands for the user's own model: any Keras model ending in a softmax."""
    inputs = keras.Input((n_features,))
    hidden = keras.layers.Dense(128, activation="relu")(inputs)
    hidden = keras.layers.Dropout(0.5)(hidden)
    return keras.Model(inputs, keras.layers.Dense(n_classes, activation="softmax")(hidden))


def load(args) -> dict:
    if args.labelme:
        d = load_labelme(args.data)
        return dict(x=d.x_train, annotations=d.annotations, x_valid=d.x_valid, y_valid=d.y_valid,
                    x_test=d.x_test, y_test=d.y_test, classes=d.classes, y_train=d.y_train)
    sim = simulate_crowd(n_items=4000, n_classes=6, n_annotators=100, annotations_per_item=3,
                         n_features=20, individual_noise="asymmetric", annotator_accuracy=0.7,
                         common_noise="asymmetric", common_strength=0.7, common_proportion=0.6,
                         seed=args.seed)
    tr, va, te = np.arange(2800), np.arange(2800, 3200), np.arange(3200, 4000)
    return dict(x=sim.x[tr], annotations=sim.annotations.subset(tr), x_valid=sim.x[va],
                y_valid=sim.y[va], x_test=sim.x[te], y_test=sim.y[te], y_train=sim.y[tr],
                classes=[str(c) for c in range(6)], true_common=sim.common_confusion)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labelme", action="store_true", help="use LabelMe instead of a simulation")
    parser.add_argument("--data", type=Path, default=None,
                        help="folder that holds labelme/ (default: CROWD_KERAS_DATA, the cache, "
                             "or a download)")
    parser.add_argument("--epochs", type=int, default=30, help="training epochs (default: 30)")
    parser.add_argument("--seed", type=int, default=0,
                        help="random seed of the simulation and the training (default: 0)")
    parser.add_argument("--verbose", action="store_true",
                        help="show TensorFlow's start-up messages")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error(f"--epochs must be at least 1, got {args.epochs}")
    if not 0 <= args.seed < 2 ** 32:   # else a traceback from the simulation or the seeding
        parser.error(f"--seed must be an integer from 0 to {2 ** 32 - 1}, got {args.seed}")
    if args.data is not None and not args.labelme:
        parser.error("--data is read with --labelme only (the simulation needs no data)")
    try:
        d = load(args)
    except CrowdDataError as exc:   # a --data folder without LabelMe: one line, not a traceback
        parser.error(str(exc))
    except DownloadError as exc:   # not on disk and not downloadable (offline, say): no usage
        parser.exit(1, f"{parser.prog}: error: {exc}\n")
    ann = d["annotations"]
    print(f"{ann.n_items} items, {ann.n_annotators} annotators, {ann.n_annotations} annotations")

    keras.utils.set_random_seed(args.seed)
    classifier = existing_classifier(d["x"].shape[1], ann.n_classes)
    noise = CommonNoiseAdaptation(ann.n_annotators, ann.n_classes,
                                  gate=AnnotatorGate(ann.n_annotators, embedding_dim=20))
    model = CrowdModel(classifier, noise)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    # Model selection on a validation split with true labels, never on the test set.
    model.fit(d["x"], ann, epochs=args.epochs, batch_size=64, verbose=0,
              callbacks=[TruthValidation(d["x_valid"], d["y_valid"]),
                         FitProgress("training the CoNAL model")])

    # After training the noise layers are dropped: the classifier alone predicts the truth.
    test_acc = float((classifier.predict(d["x_test"], verbose=0).argmax(1) == d["y_test"]).mean())
    mv_acc = float((MajorityVote().fit(ann).predict() == d["y_train"]).mean())
    print(f"classifier test accuracy {test_acc:.3f} (majority vote on the train labels: {mv_acc:.3f})")
    common = noise.common_confusion()
    print("learned common confusion (rows = true class):")
    print(np.array2string(common, precision=2, suppress_small=True))
    if "true_common" in d:
        print("true common confusion:")
        print(np.array2string(d["true_common"], precision=2, suppress_small=True))
    omega = noise.omega_for(d["x_test"][:200])
    print(f"ω over 200 test items × {ann.n_annotators} annotators: mean {omega.mean():.2f}, "
          f"range {omega.min():.2f}..{omega.max():.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
