"""The processes of the multi-worker training test (tests/test_distributed_training.py).

    python tests/multiworker_job.py reference SHARDS OUT    # one process, no cluster
    python tests/multiworker_job.py launch SHARDS OUT N     # N workers on 127.0.0.1
    python tests/multiworker_job.py worker SHARDS OUT       # one worker (TF_CONFIG set)

``reference`` trains the same small ``CrowdModel`` for one epoch three ways and writes the
weights: ``plain.npz`` (no strategy, batches of the whole data), ``mwms1.npz``
(``MultiWorkerMirroredStrategy`` with one worker, no TF_CONFIG, through
``distribute_crowd_dataset``) and ``plain2.npz`` (no strategy, each global batch the
concatenation of the two workers' per-replica batches: what two workers compute together).
``launch`` runs inside a private network namespace (``unshare -rn``: TensorFlow's gRPC server
binds 0.0.0.0, so the namespace, where loopback is the only interface, keeps it on
127.0.0.1); it brings loopback up, picks free ports, starts the workers, waits with a
deadline and kills them if it passes. The chief writes ``workers.npz``.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

GLOBAL_BATCH = 32
DEADLINE_S = 120


def build_model(meta: dict):
    import keras

    from crowd_keras.layers import CrowdLayer
    from crowd_keras.models import CrowdModel

    keras.utils.set_random_seed(0)
    shape = tuple(meta["feature_shape"])
    classifier = keras.Sequential([keras.Input(shape), keras.layers.Dense(16, activation="relu"),
                                   keras.layers.Dense(meta["n_classes"], activation="softmax")])
    model = CrowdModel(classifier, CrowdLayer(meta["n_annotators"], "MW"), warmup_epochs=0)
    model.compile(keras.optimizers.Adam(1e-2), jit_compile=False)
    return model


def weights(model) -> dict:
    return {f"w{i}": w.numpy() for i, w in enumerate(model.weights)}


def reference(shards: str, out: str) -> None:
    import numpy as np
    import tensorflow as tf

    from crowd_keras.distributed.shards import read_shards
    from crowd_keras.distributed.training import (crowd_dataset, distribute_crowd_dataset,
                                                  steps_per_epoch)

    meta = read_shards(shards)
    steps = steps_per_epoch(shards, GLOBAL_BATCH)
    model = build_model(meta)
    model.fit(crowd_dataset(shards, GLOBAL_BATCH), epochs=1, steps_per_epoch=steps, verbose=0)
    np.savez(Path(out) / "plain.npz", **weights(model))

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        model = build_model(meta)
    data, steps = distribute_crowd_dataset(strategy, shards, GLOBAL_BATCH)
    model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0)
    np.savez(Path(out) / "mwms1.npz", **weights(model), steps=steps)

    # two pipelines side by side, one global batch = both per-replica batches
    steps2 = steps_per_epoch(shards, GLOBAL_BATCH // 2, 2)
    parts = [crowd_dataset(shards, GLOBAL_BATCH, tf.distribute.InputContext(2, p, 2), steps=steps2)
             for p in range(2)]
    both = tf.data.Dataset.zip(tuple(parts)).map(
        lambda a, b: tf.nest.map_structure(lambda u, v: tf.concat([u, v], 0), a, b))
    model = build_model(meta)
    model.fit(both, epochs=1, steps_per_epoch=steps2, verbose=0)
    np.savez(Path(out) / "plain2.npz", **weights(model), steps=steps2)


def worker(shards: str, out: str) -> None:
    import numpy as np
    import tensorflow as tf

    from crowd_keras.distributed.shards import read_shards
    from crowd_keras.distributed.training import distribute_crowd_dataset

    meta = read_shards(shards)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        model = build_model(meta)
    data, steps = distribute_crowd_dataset(strategy, shards, GLOBAL_BATCH)
    model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0)
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    if task["index"] == 0:  # the chief writes; the others would write to a scratch path
        np.savez(Path(out) / "workers.npz", **weights(model), steps=steps,
                 replicas=strategy.num_replicas_in_sync)


def _free_ports(n: int) -> list:
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def launch(shards: str, out: str, n_workers: int) -> int:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in _free_ports(n_workers)]}
    procs = []
    try:
        for index in range(n_workers):
            env = dict(os.environ, TF_CONFIG=json.dumps({"cluster": cluster, "task": {
                "type": "worker", "index": index}}))
            procs.append(subprocess.Popen([sys.executable, __file__, "worker", shards, out],
                                          env=env))
        deadline = time.monotonic() + DEADLINE_S
        codes = [p.wait(timeout=max(deadline - time.monotonic(), 1)) for p in procs]
        return max(abs(c) for c in codes)
    except subprocess.TimeoutExpired:
        print(f"workers did not finish within {DEADLINE_S} s", file=sys.stderr)
        return 124
    finally:
        for p in procs:  # only the processes this launcher started
            if p.poll() is None:
                p.kill()
                p.wait()


if __name__ == "__main__":
    mode, shards_dir, out_dir = sys.argv[1:4]
    if mode == "reference":
        reference(shards_dir, out_dir)
    elif mode == "worker":
        worker(shards_dir, out_dir)
    else:
        sys.exit(launch(shards_dir, out_dir, int(sys.argv[4])))
