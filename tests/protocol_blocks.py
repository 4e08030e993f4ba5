"""Shared by the EM-step protocol tests: a fit split into blocks of items, and the shared
crowd sets those tests also run on."""
import numpy as np

from crowd_keras.aggregation.em import Block, add, run_em


def item_parts(n_items, n_blocks):
    """Every ``n_blocks``-th item, ``n_blocks`` parts: (rows of part r for each r)."""
    return [np.flatnonzero(np.arange(n_items) % n_blocks == r) for r in range(n_blocks)]


def split_fit(model, ann, n_blocks):
    """run_em over ``n_blocks`` blocks of items: the run, the fitted model and the
    posteriors in item order."""
    parts = item_parts(ann.n_items, n_blocks)
    blocks = [Block.from_annotations(ann.subset(rows)) for rows in parts]
    run = run_em(model, blocks, add(*[b.summary(ann.n_classes) for b in blocks]))
    fitted = run.runner.finish(run.state, run.summary, ann, run.history)
    post = np.empty((ann.n_items, ann.n_classes))
    for rows, latent in zip(parts, run.latents):
        post[rows] = run.runner.class_posteriors(latent)
    return run, fitted, post


def shared_set(name):
    """LabelMe's or Music's training annotations from the shared data."""
    from conftest import require_data
    from crowd_keras.datasets import load_labelme, load_music

    loader = {"labelme": load_labelme, "music": load_music}[name]
    return loader(require_data(name).parent, download=False).annotations


def dask_posteriors(ann, method, npartitions, **params):
    """``distributed.aggregate`` of ``ann`` as a Dask frame of ``npartitions`` on the
    synchronous scheduler: ``(probabilities (I, K), result, labels frame)``, the frame's rows
    and the probabilities in ``ann.item_ids`` order."""
    import dask
    import dask.dataframe as dd

    from crowd_keras.distributed import aggregate

    with dask.config.set(scheduler="sync"):
        result = aggregate(dd.from_pandas(ann.to_frame(), npartitions=npartitions),
                           method=method, **params)
        labels = result.labels.compute().loc[ann.item_ids]
    return labels[list(result.probability_columns.values())].to_numpy(), result, labels
