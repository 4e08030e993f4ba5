"""The public EM-step protocol: a new label model written in this file runs in memory, split
into blocks and on Dask by implementing the protocol and one registration line."""
import dataclasses
import pickle
from typing import Sequence

import numpy as np
import pytest

from crowd_keras import Annotations
from crowd_keras.aggregation import DawidSkene, get_label_model
from crowd_keras.aggregation.em import Block, EMLabelModel, Summary, run_em
from crowd_keras.aggregation.registry import register_label_model
from crowd_keras.datasets import simulate_crowd
from crowd_keras.numerics import softmax_rows

from protocol_blocks import dask_posteriors

pytest.importorskip("dask.dataframe")


class SharedAccuracy(EMLabelModel):
    """A toy model: one accuracy shared by every annotator, errors spread evenly."""

    accepts_gold = True     # its E-step adds the block's item log-prior

    def __init__(self, max_iter: int = 50, tol: float = 1e-8) -> None:
        self.max_iter = max_iter
        self.tol = tol

    def sufficient_statistics(self, block: Block, latent: np.ndarray) -> tuple:
        k = latent.shape[1]
        counts = np.asarray(block.XT @ latent).reshape(-1, k, k)     # [a, label, truth]
        correct = np.trace(counts, axis1=1, axis2=2).sum()
        return np.array([correct, counts.sum()]), latent.sum(axis=0)

    def m_step(self, stats: tuple) -> tuple:
        (correct, total), mass = stats
        k = len(mass)
        acc = (correct + 1) / (total + 2)
        log_pi = np.log(np.where(np.eye(k, dtype=bool), acc, (1 - acc) / (k - 1)))
        return np.log((mass + 1) / (mass + 1).sum()), log_pi

    def e_step(self, block: Block, state: tuple) -> tuple:
        log_prior, log_pi = state
        n_annotators = block.X.shape[1] // len(log_prior)
        weights = np.tile(log_pi.T, (n_annotators, 1))             # [(a, label), truth]
        logits = block.with_log_prior(block.X @ weights + log_prior)
        post, log_norm = softmax_rows(logits)
        return post, float(log_norm.sum())

    def finish(self, state: tuple, summary: Summary, template: Annotations,
               history: Sequence[float]) -> "SharedAccuracy":
        log_prior, log_pi = state
        self.annotations_ = template
        self.class_priors_ = np.exp(log_prior)
        self.confusion_matrices_ = np.broadcast_to(np.exp(log_pi), (len(template.annotator_ids),)
                                                   + log_pi.shape).copy()
        self.n_iter_ = len(history)
        return self


@pytest.fixture
def crowd():
    return simulate_crowd(n_items=400, n_classes=3, n_annotators=12, annotations_per_item=4,
                          seed=3).annotations


def test_a_split_fit_is_the_one_block_fit(crowd):
    whole = SharedAccuracy().fit(crowd)
    blocks = [Block.from_annotations(crowd.subset(np.flatnonzero(np.arange(crowd.n_items) % 3 == r)))
              for r in range(3)]
    run = run_em(SharedAccuracy(), blocks, Block.from_annotations(crowd).summary(3))
    np.testing.assert_allclose(np.exp(run.state[1]), whole.confusion_matrices_[0], atol=1e-10)
    assert len(run.history) == whole.n_iter_


def test_one_registration_line_runs_it_on_dask(crowd):
    from crowd_keras.distributed import register_method
    from crowd_keras.distributed.methods import ProtocolMethod

    register_label_model("shared_accuracy", SharedAccuracy)
    register_method("shared_accuracy", ProtocolMethod)       # the one line for Dask
    reference = get_label_model("shared_accuracy").fit(crowd)
    proba, *_ = dask_posteriors(crowd, "shared_accuracy", 4)
    np.testing.assert_allclose(proba, reference.predict_proba(), atol=1e-9)


def test_gold_enters_every_protocol_model_through_the_item_log_prior(crowd):
    sim_truth = DawidSkene().fit(crowd).predict()
    gold = np.full(crowd.n_items, -1)
    gold[:30] = (sim_truth[:30] + 1) % 3                          # deliberately not the vote
    for name in ("dawid_skene", "ibcc", "ebcc", "bwa"):
        model = get_label_model(name).fit(crowd, gold=gold)
        np.testing.assert_array_equal(model.predict()[:30], gold[:30], err_msg=name)


@pytest.mark.parametrize("progress", ["yes", "off", None, 2.5])
def test_an_em_model_refuses_a_progress_setting_it_would_read_as_a_bool(progress):
    ann = simulate_crowd(n_items=30, n_classes=2, n_annotators=4, seed=0).annotations
    with pytest.raises(ValueError, match="DawidSkene progress must be True, False or 'auto'"):
        get_label_model("dawid_skene", progress=progress).fit(ann)


def test_a_block_memo_is_made_once_and_not_carried_to_other_blocks(crowd):
    """``Block.memo`` computes a statistic once per block; a pickled copy (a Dask worker's),
    a subset or a replaced block computes its own."""
    block = Block.from_annotations(crowd)
    made = []
    assert block.memo("votes", lambda: made.append(1) or 7) == 7
    assert block.memo("votes", lambda: made.append(1) or 8) == 7
    assert made == [1]
    assert pickle.loads(pickle.dumps(block)).memo("votes", lambda: 9) == 9
    assert block.subset(np.ones(block.n_items, dtype=bool)).memo("votes", lambda: 10) == 10
    assert dataclasses.replace(block).memo("votes", lambda: 11) == 11
    assert block.memo("votes", lambda: 12) == 7
