"""Train crowd-kit's PyTorch crowd layers on the benchmark MLP (the peer in the same run).

One loop for every crowd-kit layer: the network is the benchmarks' MLP written in torch
(Linear 128, ReLU, Dropout 0.5, Linear K), Adam 1e-3, batches of items, loss = mean
cross-entropy over the annotations of the batch; LabelMe keeps the epoch with the best gold
validation accuracy, sets without a validation split train a fixed number of epochs.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

try:
    import torch
except ImportError:  # the peer is optional (bench extra)
    torch = None

BATCH = 64


def available() -> bool:
    return torch is not None


def train_crowd_layer(data: dict, seed: int, epochs: int, make_layer: Callable,
                      forward: Callable, device: str = "cpu",
                      batch_size: int = BATCH) -> tuple[float, list]:
    """Test accuracy and epoch times of a torch crowd model.

    Args:
        make_layer: ``make_layer(n_classes, n_annotators) -> nn.Module``.
        forward: ``forward(layer, x_items, logits, workers, local) -> annotation logits`` where
            ``local`` maps each annotation of the batch to its item row in ``logits``.
        device: torch device of the network, the layer and the data ("cuda" on a GPU);
        batch_size: items per step.
    """
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    ann = data["annotations"]
    k, n_feat = ann.n_classes, data["x_train"].shape[1]
    net = torch.nn.Sequential(torch.nn.Linear(n_feat, 128), torch.nn.ReLU(), torch.nn.Dropout(0.5),
                              torch.nn.Linear(128, k)).to(device)
    layer = make_layer(k, ann.n_annotators).to(device)
    x = torch.as_tensor(data["x_train"]).to(device)
    layer_params = list(layer.parameters()) if any(True for _ in layer.parameters()) else []
    if hasattr(layer, "diff_linear_1"):  # crowd-kit's CoNAL has a lazy layer: materialise it
        with torch.no_grad():
            forward(layer, x[:2], net(x[:2]), torch.zeros(2, dtype=torch.long, device=device),
                    torch.arange(2, device=device))
        layer_params = list(layer.parameters())
    opt = torch.optim.Adam(list(net.parameters()) + layer_params, lr=1e-3)
    # annotations are sorted by item: item i owns rows indptr[i]:indptr[i+1]
    per_item = np.bincount(ann.items, minlength=ann.n_items)
    indptr = np.concatenate([[0], np.cumsum(per_item)])
    workers = torch.as_tensor(ann.annotators.copy()).to(device)
    labels = torch.as_tensor(ann.labels.copy()).to(device)
    x_val = torch.as_tensor(data["x_valid"]).to(device) if "x_valid" in data else None
    best, best_state, times = -1.0, None, []
    for _ in range(epochs):
        start = time.perf_counter()
        net.train()
        order = rng.permutation(ann.n_items)
        for b in range(0, len(order), batch_size):
            items = order[b:b + batch_size]
            counts = per_item[items]
            rows = np.repeat(indptr[items], counts) + _ranks(counts)
            if len(rows) < 2:  # crowd-kit's layers squeeze() a single annotation away
                continue
            local = torch.as_tensor(np.repeat(np.arange(len(items)), counts)).to(device)
            xb = x[items]
            out = forward(layer, xb, net(xb), workers[rows], local)
            loss = torch.nn.functional.cross_entropy(out, labels[rows])
            opt.zero_grad()
            loss.backward()
            opt.step()
        if device != "cpu":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
        if x_val is not None:
            net.eval()
            with torch.no_grad():
                acc = float((net(x_val).argmax(-1).cpu().numpy() == data["y_valid"]).mean())
            if acc > best:
                best, best_state = acc, {n: t.clone() for n, t in net.state_dict().items()}
    if best_state is not None:
        net.load_state_dict(best_state)
    net.eval()
    with torch.no_grad():
        pred = net(torch.as_tensor(data["x_test"]).to(device)).argmax(-1).cpu().numpy()
    return float((pred == data["y_test"]).mean()), times


def _ranks(counts: np.ndarray) -> np.ndarray:
    """0..c-1 for each count c, concatenated (the offset of each annotation in its item)."""
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(int(counts.sum())) - starts


def crowdkit_crowd_layer(data: dict, seed: int, epochs: int,
                         device: str = "cpu", batch_size: int = BATCH) -> tuple[float, list]:
    """crowd-kit's CrowdLayer (MW) applied to the softmax output, as in the paper."""
    from crowdkit.learning import CrowdLayer

    return train_crowd_layer(
        data, seed, epochs, lambda k, a: CrowdLayer(k, a, conn_type="mw"),
        lambda layer, xb, logits, workers, local: layer(torch.softmax(logits, -1)[local], workers),
        device, batch_size)


def crowdkit_conal(data: dict, seed: int, epochs: int, device: str = "cpu",
                   batch_size: int = BATCH) -> tuple[float, list]:
    """crowd-kit's CoNAL, its gate fed the instance features (as the authors' code does)."""
    from crowdkit.learning import CoNAL

    return train_crowd_layer(
        data, seed, epochs, lambda k, a: CoNAL(k, a),
        lambda layer, xb, logits, workers, local: layer(xb[local], logits[local], workers), device,
        batch_size)
