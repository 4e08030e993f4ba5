"""Items nobody labelled: EM fits the items with labels (``Block.labelled``), so adding
unlabelled rows (a Snorkel matrix whose functions all abstain on most rows) changes neither the
fit nor its number of iterations, and every unlabelled row gets the fitted prior."""
import numpy as np
import pytest

from crowd_keras.aggregation import BWA, EBCC, IBCC, DawidSkene, OneCoinDawidSkene
from crowd_keras.aggregation.em import Block
from crowd_keras.conal.label_model import CommonNoiseModel
from crowd_keras.datasets import simulate_crowd

MODELS = {"dawid_skene": lambda: DawidSkene(labeling_functions="ignore"),
          "one_coin": lambda: OneCoinDawidSkene(labeling_functions="ignore"),
          "ibcc": lambda: IBCC(labeling_functions="ignore"),
          "ebcc": lambda: EBCC(labeling_functions="ignore"),
          "bwa": lambda: BWA(labeling_functions="ignore"),
          "conal": lambda: CommonNoiseModel(labeling_functions="ignore")}


def matrices(n_items=600, n_empty=1400, seed=2):
    """A crowd's label matrix, and the same rows spread among ``n_empty`` rows of -1."""
    ann = simulate_crowd(n_items=n_items, n_classes=3, n_annotators=12,
                         annotations_per_item=3, seed=seed).annotations
    L = np.full((n_items, 12), -1)
    L[ann.items, ann.annotators] = ann.labels
    rows = np.random.default_rng(seed).permutation(n_items + n_empty)[:n_items]
    wide = np.full((n_items + n_empty, 12), -1)
    wide[rows] = L
    return L, wide, rows


@pytest.mark.parametrize("name", sorted(MODELS))
def test_unlabelled_rows_change_neither_the_fit_nor_its_iterations(name):
    L, wide, rows = matrices()
    alone, padded = MODELS[name]().fit(L), MODELS[name]().fit(wide)
    assert padded.n_iter_ == alone.n_iter_
    np.testing.assert_allclose(padded.predict_proba()[rows], alone.predict_proba(), atol=1e-12)
    np.testing.assert_allclose(padded.confusion_matrices_, alone.confusion_matrices_,
                               atol=1e-12)
    empty = np.setdiff1d(np.arange(len(wide)), rows)
    posts = padded.predict_proba()[empty]
    np.testing.assert_allclose(posts, np.broadcast_to(posts[0], posts.shape), atol=1e-15)
    if name in ("dawid_skene", "one_coin", "bwa", "conal"):   # the fitted class prior
        np.testing.assert_allclose(posts[0], padded.class_priors_, atol=1e-12)


def test_gold_on_an_unlabelled_item_still_counts():
    # a clamped item without labels informs the class prior: it stays in the fit
    L, wide, rows = matrices(n_empty=50)
    empty = np.setdiff1d(np.arange(len(wide)), rows)
    block = Block.from_annotations(DawidSkene().fit(wide).annotations_)
    assert block.labelled().n_items == len(rows)
    prior = np.zeros((len(wide), 3))
    prior[empty[:5]] = [0.0, -np.inf, -np.inf]
    assert Block(block.item_ids, block.X, prior).labelled().n_items == len(rows) + 5
    base = DawidSkene(labeling_functions="ignore").fit(wide)
    gold = DawidSkene(labeling_functions="ignore").fit(wide, gold=dict.fromkeys(empty[:5], 0))
    assert gold.class_priors_[0] > base.class_priors_[0]
    np.testing.assert_allclose(gold.predict_proba()[empty[:5]], np.eye(3)[[0] * 5], atol=1e-12)


@pytest.mark.parametrize("name", ["dawid_skene", "ebcc", "bwa"])
def test_unlabelled_rows_on_dask_as_in_memory(name):
    dask = pytest.importorskip("dask")
    import dask.array as da
    from crowd_keras.distributed.engine import PartitionedAnnotations
    from crowd_keras.distributed.methods import ProtocolMethod

    _, wide, _ = matrices()
    wide = np.concatenate([np.full((500, wide.shape[1]), -1), wide])   # a block of none
    memory = MODELS[name]().fit(wide)
    with dask.config.set(scheduler="threads"):
        data = PartitionedAnnotations.from_label_matrix(da.from_array(wide, chunks=(500, -1)),
                                                        3)
        fit = data.fit(ProtocolMethod(MODELS[name]()))
        labels = data.labels(fit).compute()
    assert fit.model.n_iter_ == memory.n_iter_
    np.testing.assert_allclose(fit.model.confusion_matrices_, memory.confusion_matrices_,
                               atol=1e-10)
    np.testing.assert_allclose(labels.filter(like="p_").to_numpy(), memory.predict_proba(),
                               atol=1e-10)
