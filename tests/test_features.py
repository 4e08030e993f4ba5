"""crowd_keras.features.out_of_fold: out-of-fold probabilities from scikit-learn-style and
Keras classifiers, and the whole path into a label model's pred_probs."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crowd_keras import Annotations
from crowd_keras.aggregation import DawidSkene, MajorityVote
from crowd_keras.datasets import simulate_crowd
from crowd_keras.errors import CrowdDataError
from crowd_keras.features import out_of_fold, stratified_folds

sklearn_linear = pytest.importorskip("sklearn.linear_model")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sim():
    return simulate_crowd(n_items=400, n_classes=3, n_annotators=20, annotations_per_item=3,
                          annotator_accuracy=(0.45, 0.75), class_sep=2.0, seed=2)


def logistic():
    return sklearn_linear.LogisticRegression(max_iter=500)


def test_folds_are_stratified_and_seeded():
    codes = np.repeat([0, 1, 2], [50, 30, 20])
    folds = stratified_folds(codes, 5, random_state=1)
    for c in range(3):
        counts = np.bincount(folds[codes == c], minlength=5)
        assert counts.max() - counts.min() <= 1
    np.testing.assert_array_equal(folds, stratified_folds(codes, 5, random_state=1))
    assert not np.array_equal(folds, stratified_folds(codes, 5, random_state=2))


def test_folds_check_their_arguments_and_give_nan_codes_a_fold():
    # n_splits=2.5 dealt a fold 2, n_splits=0 raised numpy's "high <= 0", and NaN codes
    # (no group of np.unique equal to them) were left np.empty's garbage
    codes = np.array([0.0, 1.0, np.nan, np.nan, 1.0, np.nan])
    folds = stratified_folds(codes, 2, random_state=0)
    assert set(folds) <= {0, 1}
    assert sorted(np.bincount(folds[np.isnan(codes)], minlength=2)) == [1, 2]
    with pytest.raises(TypeError, match="n_splits"):
        stratified_folds(codes, 2.5)
    with pytest.raises(ValueError, match="n_splits"):
        stratified_folds(codes, 0)
    with pytest.raises(CrowdDataError, match="1-d"):
        stratified_folds(np.zeros((2, 2)), 2)


def test_probabilities_are_out_of_fold(sim):
    # a 1-nearest-neighbour model recites its training labels: in fold it would be 100% right
    from sklearn.neighbors import KNeighborsClassifier

    noisy = MajorityVote().fit(sim.annotations).predict()
    proba = out_of_fold(lambda: KNeighborsClassifier(1), sim.x, noisy, n_splits=5)
    assert proba.shape == (len(sim.y), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert (proba.argmax(axis=1) == noisy).mean() < 0.95


def test_a_class_missing_from_a_fold_still_gets_its_column(sim):
    labels = MajorityVote().fit(sim.annotations).predict()
    labels = np.where(labels == 2, 0, labels)
    labels[0] = 2                           # one item of class 2: its fold trains without it
    proba, folds = out_of_fold(logistic, sim.x, labels, n_splits=5, return_folds=True)
    assert proba.shape == (len(labels), 3)
    lacking = [f for f in range(5) if not (labels[folds != f] == 2).any()]
    assert lacking == [folds[0]]
    assert (proba[np.isin(folds, lacking), 2] < 1e-5).all()


def test_labels_from_annotations_names_and_frames(sim):
    frame = pd.DataFrame(sim.x, index=[f"i{n}" for n in range(len(sim.y))])
    a = out_of_fold(logistic, frame, sim.annotations, label_model="dawid_skene")
    codes = DawidSkene().fit(sim.annotations).predict()
    b = out_of_fold(logistic, sim.x, codes)
    names = np.array(["cat", "dog", "eel"])[codes]
    c = out_of_fold(logistic(), sim.x, names)               # an estimator is cloned
    np.testing.assert_allclose(a, b, atol=1e-9)
    np.testing.assert_allclose(b, c, atol=1e-9)


def test_a_frame_indexed_by_item_id_is_aligned_with_the_annotations(sim):
    # Annotations.from_frame sorts the item ids ("img10" before "img2"): features in the
    # natural order were paired with other items' labels silently
    from crowd_keras import Annotations

    names = np.array([f"img{i}" for i in range(len(sim.y))])
    frame = sim.annotations.to_frame()
    ann = Annotations.from_frame(frame.assign(task=names[frame["task"]]))
    assert not np.array_equal(ann.item_ids, names)
    x = pd.DataFrame(sim.x, index=names)
    expected = out_of_fold(logistic, x.loc[ann.item_ids].to_numpy(), ann)
    np.testing.assert_allclose(out_of_fold(logistic, x, ann), expected, atol=1e-9)
    np.testing.assert_allclose(out_of_fold(logistic, x, MajorityVote().fit(ann)), expected,
                               atol=1e-9)
    # pandas' default index is positions: rows in item order, as an array's
    shifted = Annotations.from_frame(frame.assign(task=frame["task"] + 1))
    np.testing.assert_allclose(out_of_fold(logistic, pd.DataFrame(sim.x), shifted),
                               out_of_fold(logistic, sim.x, shifted), atol=1e-9)
    with pytest.raises(CrowdDataError,
                       match=r"no row for 1 item\(s\) of the annotations: 'img8'"):
        out_of_fold(logistic, x.rename(index={"img8": "other"}), ann)


def test_a_series_of_labels_is_aligned_with_a_frame_of_the_same_ids(sim):
    # cleanlab's label_quality["consensus_label"] is indexed by item id: in another order
    # than x, it paired items with other items' labels silently
    names = np.array([f"img{i}" for i in range(len(sim.y))])
    x = pd.DataFrame(sim.x, index=names)
    labels = pd.Series(sim.y, index=names)
    expected = out_of_fold(logistic, x, labels)
    shuffled = labels.sample(frac=1.0, random_state=0)
    np.testing.assert_allclose(out_of_fold(logistic, x, shuffled), expected, atol=1e-9)
    # pandas' default index on either side: by position, as before
    np.testing.assert_allclose(out_of_fold(logistic, x, shuffled.reset_index(drop=True)),
                               out_of_fold(logistic, sim.x, shuffled.to_numpy()), atol=1e-9)


def test_out_of_fold_probabilities_help_a_label_model(sim):
    labels = MajorityVote().fit(sim.annotations).predict()
    proba = out_of_fold(logistic, sim.x, labels)
    alone = (DawidSkene().fit(sim.annotations).predict() == sim.y).mean()
    model = DawidSkene().fit(sim.annotations, pred_probs=proba)
    assert (model.predict() == sim.y).mean() > alone + 0.02
    assert model.classifier_weight_ > 0.3


def test_whole_float_labels_are_read_as_the_integer_labels_they_stand_for():
    # a column of codes with NaN is float: it must read as the same codes (a missing label
    # shifted every code and -1.0 became a class: the columns were other classes' silently)
    import pandas as pd

    from crowd_keras.features import training_labels

    ints = np.array([2, 0, -1, 2, 0])
    codes, classes = training_labels(ints, 5)
    np.testing.assert_array_equal(classes, [0, 1, 2])
    for same in (ints.astype(float), np.where(ints < 0, np.nan, ints),
                 pd.Series(ints, dtype="Int64").mask(ints < 0),
                 np.array([2, 0, None, 2, 0], dtype=object)):
        got, got_classes = training_labels(same, 5)
        np.testing.assert_array_equal(got, codes)
        np.testing.assert_array_equal(got_classes, classes)
    # as Annotations.from_frame reads integer labels: a stray large code is no 10**9 classes
    got, got_classes = training_labels(np.array([0.0, 10.0 ** 9, np.nan]), 3)
    np.testing.assert_array_equal(got_classes, [0, 10 ** 9])
    np.testing.assert_array_equal(got, [0, 1, -1])
    for bad, match in (([0.0, np.inf], "inf of item 1 is not a whole number"),
                       ([0.0, 1e20], "too large"),
                       (np.array([1, "a"], dtype=object),
                        r"mix types: int 1 at item 0 and str 'a' at item 1")):
        with pytest.raises(CrowdDataError, match=match):
            training_labels(np.asarray(bad), 2)


def test_sparse_features_as_scikit_learn_takes_them(sim):
    # text features (TfidfVectorizer) are scipy sparse matrices: rows are selected, not
    # len()-ed (scipy: "sparse array length is ambiguous")
    sparse = pytest.importorskip("scipy.sparse")
    dense = out_of_fold(logistic, sim.x, sim.y)
    for x in (sparse.csr_matrix(sim.x), sparse.coo_matrix(sim.x), sparse.csr_array(sim.x)):
        np.testing.assert_allclose(out_of_fold(logistic, x, sim.y), dense, atol=1e-6)


def test_items_without_annotations_are_predicted_not_trained_on(sim):
    # cleanlab's wide layout keeps rows without any label: their consensus is only the class
    # prior, the same class for all of them, and no training label
    from crowd_keras import Annotations
    from crowd_keras.features import training_labels

    ann = sim.annotations
    more = Annotations(ann.items, ann.annotators, ann.labels, n_items=ann.n_items + 30,
                       n_annotators=ann.n_annotators, n_classes=ann.n_classes)
    codes, _ = training_labels(more, more.n_items)
    np.testing.assert_array_equal(codes[ann.n_items:], -1)
    np.testing.assert_array_equal(codes[:ann.n_items], MajorityVote().fit(ann).predict())
    # a gold label is a label: the gold item without annotations is trained on
    model = DawidSkene().fit(more, gold={ann.n_items: 2})
    codes, _ = training_labels(model, more.n_items)
    assert codes[ann.n_items] == 2 and (codes[ann.n_items + 1:] == -1).all()
    x = np.vstack([sim.x, sim.x[:30]])
    proba = out_of_fold(logistic, x, more, label_model="dawid_skene")
    expected = out_of_fold(logistic, x, np.append(DawidSkene().fit(ann).predict(),
                                                  np.full(30, -1)))
    np.testing.assert_allclose(proba, expected, atol=1e-9)


def test_bad_inputs_are_named(sim):
    with pytest.raises(CrowdDataError, match="one per item"):
        out_of_fold(logistic, sim.x, np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="n_splits"):
        out_of_fold(logistic, sim.x, sim.y, n_splits=1)
    with pytest.raises(CrowdDataError, match="not one of the classes"):
        out_of_fold(logistic, sim.x, np.array(["a"] * len(sim.y)), classes=["b", "c"])
    with pytest.raises(TypeError, match="model_fn"):
        out_of_fold(42, sim.x, sim.y)



def test_classes_other_than_the_annotations_are_refused_not_ignored(sim):
    # they were ignored: the columns stayed in the annotations' order whatever was asked
    model = MajorityVote().fit(sim.annotations)
    for labels in (sim.annotations, model):
        with pytest.raises(CrowdDataError, match=r"classes \[2, 1, 0\] are not the "
                                                 r"annotations' classes \[0, 1, 2\]"):
            out_of_fold(logistic, sim.x, labels, classes=[2, 1, 0])
        with pytest.raises(CrowdDataError, match=r"classes \['a', 'b', 'c'\] are not"):
            out_of_fold(logistic, sim.x, labels, classes=["a", "b", "c"])
    same = out_of_fold(logistic, sim.x, model, classes=[0, 1, 2])
    np.testing.assert_array_equal(same, out_of_fold(logistic, sim.x, model))

@pytest.mark.slow
def test_a_keras_model(sim):
    keras = pytest.importorskip("keras")

    def make():
        model = keras.Sequential([keras.Input((sim.x.shape[1],)),
                                  keras.layers.Dense(3, activation="softmax")])
        model.compile(optimizer=keras.optimizers.Adam(0.05),
                      loss="sparse_categorical_crossentropy")
        return model

    proba = out_of_fold(make, sim.x, sim.y, n_splits=3, fit_kwargs={"epochs": 20})
    assert proba.shape == (len(sim.y), 3)
    assert (proba.argmax(axis=1) == sim.y).mean() > 0.7

    def logits():
        model = keras.Sequential([keras.Input((sim.x.shape[1],)), keras.layers.Dense(3)])
        model.compile(optimizer="adam", loss="categorical_crossentropy")
        return model

    with pytest.raises(CrowdDataError, match="soft-max"):
        out_of_fold(logits, sim.x, sim.y, n_splits=2, fit_kwargs={"epochs": 1})


def test_importing_them_imports_no_keras_sklearn_or_cleanlab():
    code = ("import sys\nimport crowd_keras.features, crowd_keras.compat.cleanlab\n"
            "heavy = [m for m in ('keras', 'tensorflow', 'sklearn', 'cleanlab', 'torch', 'jax')"
            " if m in sys.modules]\nassert not heavy, heavy\nprint('LIGHT')")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": ""}, cwd=ROOT, timeout=120)
    assert "LIGHT" in res.stdout, res.stderr


def test_sample_weight_in_fit_kwargs_is_split_per_fold(sim):
    """Each fold's fit gets the weights of its own training rows (not the whole array, which
    scikit-learn and Keras refuse), in the order of an x aligned by item id."""
    from sklearn.linear_model import LogisticRegression
    labels = np.asarray(sim.y)
    weights = np.random.default_rng(0).uniform(0.1, 3.0, len(labels))
    proba, folds = out_of_fold(LogisticRegression, sim.x, labels, n_splits=3,
                               fit_kwargs={"sample_weight": weights}, return_folds=True,
                               min_probability=0.0)
    for fold in range(3):
        train, test = folds != fold, folds == fold
        model = LogisticRegression().fit(sim.x[train], labels[train],
                                         sample_weight=weights[train])
        np.testing.assert_allclose(proba[test], model.predict_proba(sim.x[test]), atol=1e-6)
    plain = out_of_fold(LogisticRegression, sim.x, labels, n_splits=3, min_probability=0.0)
    assert not np.allclose(plain, proba)
    # a frame indexed by item id in another order: weights by position follow its rows, a
    # Series indexed by id is aligned by id; both give the same probabilities
    ann = Annotations.from_frame(pd.DataFrame({"task": np.arange(len(labels)),
                                               "worker": 0, "label": labels}))
    order = np.random.default_rng(1).permutation(len(labels))
    frame = pd.DataFrame(sim.x[order], index=order)
    expected = out_of_fold(LogisticRegression, sim.x, ann, n_splits=3,
                           fit_kwargs={"sample_weight": weights})
    for given in (weights[order], pd.Series(weights[order], index=order)):
        got = out_of_fold(LogisticRegression, frame, ann, n_splits=3,
                          fit_kwargs={"sample_weight": given})
        np.testing.assert_allclose(got, expected, atol=1e-6)
    with pytest.raises(CrowdDataError, match=r"sample_weight has shape \(3,\), expected"):
        out_of_fold(LogisticRegression, sim.x, labels, fit_kwargs={"sample_weight": [1, 2, 3]})
    with pytest.raises(CrowdDataError, match="no weight for 1 row"):
        out_of_fold(LogisticRegression, frame, ann,
                    fit_kwargs={"sample_weight": pd.Series(weights[order][1:], index=order[1:])})


def test_a_frame_indexed_by_the_ids_written_as_text_is_refused_not_read_by_position():
    """Item ids 0..n-1 and features indexed by "0".."n-1" in another row order were read by
    position (each item another item's features; the classifier fell to chance)."""
    from sklearn.linear_model import LogisticRegression

    from crowd_keras import CrowdDataError
    from crowd_keras.datasets import simulate_crowd
    from crowd_keras.features import by_item_id, out_of_fold

    sim = simulate_crowd(n_items=60, n_classes=3, n_annotators=6, annotations_per_item=3,
                         seed=5)
    order = np.random.default_rng(0).permutation(60)
    x = pd.DataFrame(sim.x[order], index=[str(i) for i in order])
    with pytest.raises(CrowdDataError, match=r"x's index holds '\d+' \(str\) where the item ids "
                                             r"hold \d+ \(int64\): ids must be of one type"):
        out_of_fold(LogisticRegression(), x, sim.annotations)
    # by the ids themselves: aligned; by pandas' default index: by position
    by_id = pd.DataFrame(sim.x[order], index=order)
    np.testing.assert_array_equal(by_item_id(by_id, sim.annotations).to_numpy(), sim.x)
    assert by_item_id(pd.DataFrame(sim.x), sim.annotations).shape == (60, sim.x.shape[1])


def test_sample_weight_keyed_by_item_id_beside_an_array_x_follows_the_items():
    """x an array in item order, weights a Series by item id in another order: the index
    was ignored (every training row got another item's weight)."""
    from sklearn.base import BaseEstimator, ClassifierMixin

    from crowd_keras.features import out_of_fold

    sim = simulate_crowd(n_items=40, n_classes=2, n_annotators=5, annotations_per_item=3,
                         seed=1)
    seen = {}

    class Spy(ClassifierMixin, BaseEstimator):
        def fit(self, x, y, sample_weight=None):
            self.classes_ = np.unique(y)
            seen.update(zip(x[:, 0].astype(int).tolist(), sample_weight.tolist()))
            return self

        def predict_proba(self, x):
            return np.full((len(x), len(self.classes_)), 1 / len(self.classes_))

    x = np.arange(40, dtype=float)[:, None]                   # the feature: the item's position
    weights = pd.Series(np.arange(40, dtype=float), index=sim.annotations.item_ids)[::-1]
    out_of_fold(Spy(), x, sim.annotations, fit_kwargs={"sample_weight": weights})
    assert len(seen) == 40 and all(seen[i] == i for i in seen)
    # labels that name no items: a keyed Series cannot be placed
    with pytest.raises(CrowdDataError, match="sample_weight is a Series indexed by its own ids"):
        out_of_fold(Spy(), x, np.asarray(sim.y), fit_kwargs={"sample_weight": weights})
