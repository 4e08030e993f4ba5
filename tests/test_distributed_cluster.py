"""crowd_keras.distributed on a real dask.distributed LocalCluster: 2 worker processes on
127.0.0.1, a simulated crowd in many partitions, compared with the in-memory fits
(Dawid-Skene, with a classifier's probabilities too, the default label model `auto`, the
Snorkel adapter's default path).

One test function, so that a run with pytest-xdist starts one cluster only.
"""
import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from crowd_keras import Annotations  # noqa: E402
from crowd_keras.aggregation import AutoLabelModel, DawidSkene  # noqa: E402
from crowd_keras.datasets import simulate_crowd  # noqa: E402
from crowd_keras.distributed import aggregate  # noqa: E402

from test_distributed import TOL, assert_same_labels, lf_matrix  # noqa: E402
from test_distributed_auto import assert_same_choice  # noqa: E402


@pytest.mark.slow
def test_two_local_workers_fit_what_one_process_fits():
    sim = simulate_crowd(n_items=4000, n_classes=4, n_annotators=60, annotations_per_item=5,
                         seed=7)
    df = sim.annotations.to_frame().sample(frac=1, random_state=0)   # items spread out
    ann = Annotations.from_frame(df)
    L = lf_matrix(n=8000, seed=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None,
                                  memory_limit="1GiB") as cluster, \
            distributed.Client(cluster) as client:
        # both workers registered before any work, so that both can be asked to take part
        client.wait_for_workers(2, timeout=120)
        addresses = [cluster.scheduler_address, *client.scheduler_info()["workers"]]
        assert len(addresses) == 3, addresses
        assert all(a.startswith("tcp://127.0.0.1:") for a in addresses), addresses
        ddf = dd.from_pandas(df, npartitions=24)
        with distributed.get_task_stream(client) as stream:
            result = aggregate(ddf, method="dawid_skene")
        delta = assert_same_labels(result, DawidSkene().fit(ann), ann)
        assert result.model.n_iter_ == DawidSkene().fit(ann).n_iter_
        print(f"Dawid-Skene, 2 workers, 24 partitions: max |dp| = {delta:.2e}")
        # both workers ran the fit's tasks, and its blocks are held by the cluster's workers.
        # (Which worker ends up holding the blocks is the scheduler's choice: a run had all
        # 24 on one worker, so the placement itself is not asserted.)
        workers = set(client.scheduler_info()["workers"])
        assert {task["worker"] for task in stream.data} == workers
        blocks = {block.key for block in result.data.blocks}
        held = {key for w, keys in client.has_what().items() if w in workers for key in keys}
        assert blocks <= held, blocks - held

        # the default label model: held-out fits of its candidates, each partitioned
        reference = AutoLabelModel(min_heldout=3000).fit(ann)
        result = aggregate(ddf, min_heldout=3000)
        assert_same_choice(result, reference)
        delta = assert_same_labels(result, reference, ann)
        print(f"auto, 2 workers: chose {reference.chosen_}, max |dp| = {delta:.2e}")

        # a classifier's probabilities as a Dask frame: joined to the blocks on the workers
        rng = np.random.default_rng(0)
        probs = pd.DataFrame(0.5 * rng.dirichlet(np.ones(4), ann.n_items) + 0.5 * np.eye(4)[sim.y],
                             index=ann.item_ids)
        reference = DawidSkene().fit(ann, pred_probs=probs)
        result = aggregate(ddf, method="dawid_skene",
                           pred_probs=dd.from_pandas(probs.sample(frac=1, random_state=1),
                                                     npartitions=5))
        delta = assert_same_labels(result, reference, ann)
        assert result.model.classifier_weight_ == pytest.approx(reference.classifier_weight_,
                                                                abs=1e-10)
        print(f"Dawid-Skene with a classifier, 2 workers: max |dp| = {delta:.2e}")

        from crowd_keras.integrations.snorkel import CrowdLabelModel

        memory = CrowdLabelModel(cardinality=2).fit(L, progress_bar=False)
        chunked = CrowdLabelModel(cardinality=2).fit(da.from_array(L, chunks=(700, 8)),
                                                     progress_bar=False)
        probs = chunked.predict_proba(da.from_array(L, chunks=700)).compute()
        assert float(np.abs(probs - memory.predict_proba(L)).max()) < TOL
        np.testing.assert_allclose(chunked.get_weights(), memory.get_weights(), atol=TOL)
