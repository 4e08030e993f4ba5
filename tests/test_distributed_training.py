"""Training at scale: sharded parquet files, the tf.data pipeline over them, and CrowdModel under
MultiWorkerMirroredStrategy, one worker and two worker processes on 127.0.0.1.

The workers run in subprocesses (tests/multiworker_job.py); the two-worker run inside a private
network namespace (``unshare -rn``), because TensorFlow's gRPC server listens on 0.0.0.0
(tensorflow/core/distributed_runtime/rpc/grpc_server_lib.cc) and this project's machines
allow listening on 127.0.0.1 only: in the namespace loopback is the only interface.
"""
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyarrow")

from crowd_keras.datasets import simulate_crowd  # noqa: E402
from crowd_keras.distributed.shards import iter_file, read_shards, write_shards  # noqa: E402

JOB = Path(__file__).with_name("multiworker_job.py")
ROOT = JOB.parents[1]
TIMEOUT_S = 150


def _crowd():
    return simulate_crowd(n_items=640, n_classes=3, n_annotators=20, annotations_per_item=3,
                          n_features=8, seed=0)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    path = tmp_path_factory.mktemp("shards")
    sim = _crowd()
    write_shards(sim.annotations, sim.x, path, n_shards=4, row_group_size=50)
    return path


def _run(args, timeout=TIMEOUT_S):
    """Run a job in its own process group; on timeout kill that group (the job's workers too)."""
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3",
               OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{args[2:4]} did not finish within {timeout} s:\n{out[-3000:]}")
    assert proc.returncode == 0, out[-4000:]
    return out


def _weights(path):
    with np.load(path) as npz:
        return {k: npz[k] for k in npz.files if k.startswith("w")}, dict(npz)


def _max_delta(a, b):
    assert a.keys() == b.keys()
    return max(float(np.abs(a[k] - b[k]).max()) for k in a)


def test_shards_hold_the_padded_annotations_and_features(shards, tmp_path):
    sim = _crowd()
    meta = read_shards(shards)
    assert meta["rows"] == [160] * 4 and meta["n_items"] == 640
    assert meta["feature_shape"] == [8] and meta["max_annotations"] == 3
    parts = [b for path in meta["paths"] for b in iter_file(path, 8, 3, batch_rows=70)]
    x, ids, labels = (np.concatenate(col) for col in zip(*parts))
    np.testing.assert_allclose(x, sim.x.astype(np.float32))
    ann_ids, ann_labels = sim.annotations.to_padded()
    np.testing.assert_array_equal(ids, ann_ids)
    np.testing.assert_array_equal(labels, ann_labels)
    with pytest.raises(FileExistsError):
        write_shards(sim.annotations, sim.x, shards)
    with pytest.raises(Exception, match="items"):
        write_shards(sim.annotations, sim.x[:10], tmp_path / "bad")


def test_the_pipeline_splits_files_between_workers(shards):
    tf = pytest.importorskip("tensorflow")
    from crowd_keras.distributed.training import crowd_dataset, steps_per_epoch

    sim = _crowd()
    assert steps_per_epoch(shards, 32) == 20 and steps_per_epoch(shards, 16, 2) == 20
    with pytest.raises(ValueError, match="one file per worker"):
        steps_per_epoch(shards, 16, 5)
    second = crowd_dataset(shards, 32, tf.distribute.InputContext(2, 1, 2))
    batches = list(second.as_numpy_iterator())
    assert len(batches) == 20 and batches[0][0]["x"].shape == (16, 8)
    # pipeline 1 of 2 reads files 1 and 3: items 160-319 and 480-639, in order
    x = np.concatenate([b[0]["x"] for b in batches])
    np.testing.assert_allclose(x, np.concatenate([sim.x[160:320], sim.x[480:640]]), rtol=1e-6)


def test_the_pipelines_counts_are_checked_and_named(shards):
    # batch_size=0 was a ZeroDivisionError, 2.5 a tf.data dtype error inside the pipeline,
    # True read as a batch of one
    tf = pytest.importorskip("tensorflow")
    from crowd_keras.distributed.training import (crowd_dataset, distribute_crowd_dataset,
                                                  steps_per_epoch)

    for bad, kind in ((0, ValueError), (-3, ValueError), (2.5, TypeError), (32.0, TypeError),
                      (True, TypeError), ("32", TypeError)):
        with pytest.raises(kind, match=r"^batch_size must be an integer >= 1"):
            crowd_dataset(shards, bad)
        with pytest.raises(kind, match=r"^batch_size must be an integer >= 1"):
            steps_per_epoch(shards, bad)
        with pytest.raises(kind, match=r"^global_batch_size must be an integer >= 1"):
            distribute_crowd_dataset(tf.distribute.get_strategy(), shards, bad)
    with pytest.raises(ValueError, match=r"^n_pipelines must be an integer >= 1, got 0"):
        steps_per_epoch(shards, 16, 0)
    for key, bad in (("steps", 0), ("read_rows", 0), ("shuffle_buffer", -1),
                     ("shuffle_buffer", 1.5)):
        with pytest.raises((TypeError, ValueError), match=rf"^{key} must be an integer"):
            crowd_dataset(shards, 32, **{key: bad})
    with pytest.raises(TypeError, match="^repeat must be True or False"):
        crowd_dataset(shards, 32, repeat=1)
    assert len(list(crowd_dataset(shards, np.int64(32)).as_numpy_iterator())) == 20


@pytest.fixture(scope="module")
def reference(shards, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    _run([sys.executable, str(JOB), "reference", str(shards), str(out)])
    return out


def test_one_worker_under_multi_worker_strategy_trains_as_without_strategy(reference):
    plain, _ = _weights(reference / "plain.npz")
    mwms, info = _weights(reference / "mwms1.npz")
    assert int(info["steps"]) == 20
    assert _max_delta(plain, mwms) < 1e-6


def _can_isolate_network() -> str:
    """Empty when a private network namespace can be made here, else the reason."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "no unshare/ip command"
    probe = subprocess.run(["unshare", "-rn", "ip", "link", "set", "lo", "up"],
                           capture_output=True, text=True)
    return "" if probe.returncode == 0 else f"unshare -rn failed: {probe.stderr.strip()}"


@pytest.mark.slow
def test_two_workers_on_loopback_match_one_worker_after_the_same_steps(shards, reference,
                                                                       tmp_path):
    reason = _can_isolate_network()
    if reason:
        pytest.skip("two TensorFlow workers need their gRPC servers, which listen on 0.0.0.0; "
                    "this machine allows 127.0.0.1 only and a private network namespace "
                    f"cannot be made ({reason}); the one-worker strategy test ran instead")
    _run(["unshare", "-rn", sys.executable, str(JOB), "launch", str(shards), str(tmp_path), "2"])
    workers, info = _weights(tmp_path / "workers.npz")
    assert int(info["replicas"]) == 2 and int(info["steps"]) == 20
    together, _ = _weights(reference / "plain2.npz")   # the same global batches, one process
    plain, _ = _weights(reference / "plain.npz")       # other batches: a different model
    assert _max_delta(workers, together) < 1e-5
    assert _max_delta(workers, plain) > 1e-3


def _numbered_shards(path, sizes):
    """Shards of files holding ``sizes`` rows, each row's feature its item's index."""
    n = int(sum(sizes))
    sim = simulate_crowd(n_items=n, n_classes=3, n_annotators=5, annotations_per_item=2,
                         n_features=2, seed=0)
    x = np.repeat(np.arange(n, dtype=np.float32)[:, None], 2, axis=1)
    write_shards(sim.annotations, x, path, n_shards=len(sizes))
    meta = read_shards(path)
    assert meta["rows"] == list(sizes), meta["rows"]      # write_shards splits evenly here
    return n


def test_shuffled_passes_leave_out_other_rows_each_epoch(tmp_path):
    """The cut to full batches came before the shuffle: the same tail rows were left out of
    every epoch (3 of 43 items never trained in ten epochs)."""
    pytest.importorskip("tensorflow")
    from crowd_keras.distributed.training import crowd_dataset
    n = _numbered_shards(tmp_path, [15, 14, 14])
    data = crowd_dataset(tmp_path, 4, shuffle_buffer=64, seed=3, repeat=True)
    seen = set()
    for epoch, (inputs, _) in enumerate(data.take(10 * (n // 4)).as_numpy_iterator()):
        seen.update(inputs["x"][:, 0].astype(int).tolist())
    assert seen == set(range(n))


def test_shard_files_that_differ_from_their_description_are_named(tmp_path):
    pytest.importorskip("tensorflow")
    import json

    from crowd_keras import CrowdDataError
    from crowd_keras.distributed.shards import SHARDS_FILE
    from crowd_keras.distributed.training import crowd_dataset
    _numbered_shards(tmp_path, [20, 20])
    with pytest.raises(ValueError, match=r"steps=100 batches of 4 rows, but this pipeline's "
                                         r"files hold 40 rows \(10 full batches\)"):
        crowd_dataset(tmp_path, 4, steps=100)          # was cut to 10 without a word
    with pytest.raises(TypeError, match="seed must be an integer"):
        crowd_dataset(tmp_path, 4, shuffle_buffer=8, seed="x")
    meta = json.loads((tmp_path / SHARDS_FILE).read_text())
    meta["rows"][1] = 30                                 # the file holds 20
    (tmp_path / SHARDS_FILE).write_text(json.dumps(meta))
    with pytest.raises(CrowdDataError, match=r"part.* holds 20 rows; _crowd_shards.json lists 30"):
        crowd_dataset(tmp_path, 4)
    meta["rows"][1] = 20
    (tmp_path / SHARDS_FILE).write_text(json.dumps(meta))
    (tmp_path / meta["files"][1]).unlink()
    with pytest.raises(CrowdDataError, match="is listed in _crowd_shards.json but missing"):
        crowd_dataset(tmp_path, 4)


def test_workers_with_uneven_files_warn_how_many_items_each_epoch_leaves_out(tmp_path):
    import json
    import warnings

    from crowd_keras.distributed.shards import SHARDS_FILE
    from crowd_keras.distributed.training import steps_per_epoch
    _numbered_shards(tmp_path, [24, 24, 24, 24])
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # even files: nothing to say
        assert steps_per_epoch(tmp_path, 8, 2) == 6
    # another writer's layout (the steps read the description only): worker 0 holds 80 rows
    # in files 0 and 2, worker 1 16 in files 1 and 3
    meta = json.loads((tmp_path / SHARDS_FILE).read_text())
    meta["rows"] = [40, 8, 40, 8]
    (tmp_path / SHARDS_FILE).write_text(json.dumps(meta))
    with pytest.warns(UserWarning, match=r"64 of 96 items are left out of every epoch"):
        assert steps_per_epoch(tmp_path, 8, 2) == 2


MIRRORED = """
import numpy as np, tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import sys
sys.path.insert(0, "tests")
from test_distributed_training import _numbered_shards
from crowd_keras.distributed.training import distribute_crowd_dataset
path = sys.argv[1]
n = _numbered_shards(path, [14, 13, 13])
for devices in (["/cpu:0"], ["/cpu:0", "/cpu:1"]):
    strategy = tf.distribute.MirroredStrategy(devices)
    data, steps = distribute_crowd_dataset(strategy, path, global_batch_size=8)
    batches, seen = iter(data), []
    for _ in range(steps):                 # one epoch, as fit(steps_per_epoch=steps) runs it
        for part in strategy.experimental_local_results(next(batches)[0]["x"]):
            seen += part.numpy()[:, 0].astype(int).tolist()
    assert steps == 5 and sorted(seen) == list(range(n)), (len(devices), steps, len(seen))
    del batches, data          # the repeating iterator's threads held the exit otherwise
print("OK mirrored", flush=True)
"""


def test_two_replicas_of_one_worker_run_the_steps_of_one_epoch(tmp_path):
    """Each step takes a batch for each replica of the pipeline: with two replicas the
    steps were computed for one, so an epoch trained every item twice."""
    out = _run([sys.executable, "-c", MIRRORED, str(tmp_path / "shards")])
    assert "OK mirrored" in out
