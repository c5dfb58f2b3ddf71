#!/usr/bin/env python3
"""Same-run PyTorch anchor for the Go Fashion-MNIST training command.

Run with the system Python (torch 1.13 + numpy):
    PATH=/usr/bin:$PATH python3 bench/torchref/fashion.py -model mlp -epochs 1
"""
import argparse
import gzip
import os
import resource
import time

import numpy as np
import torch
import torch.nn as nn

# Fashion-MNIST train-set statistics of pixels/255.0.
MEAN = 0.2860
STD = 0.3530


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    dtype_code = (magic >> 8) & 0xFF
    ndim = magic & 0xFF
    if dtype_code != 0x08:
        raise ValueError("%s: unsupported IDX dtype 0x%02x" % (path, dtype_code))
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    offset = 4 + 4 * ndim
    arr = np.frombuffer(data, dtype=np.uint8, offset=offset)
    expected = int(np.prod(dims))
    if arr.size != expected:
        raise ValueError("%s: expected %d values, got %d" % (path, expected, arr.size))
    return arr.reshape(dims)


def load_split(data_dir, prefix):
    images = read_idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"))
    x = images.astype(np.float32) / 255.0
    x = (x - MEAN) / STD
    x = torch.from_numpy(x.astype(np.float32)).unsqueeze(1)  # N,1,28,28
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


def build_model(name):
    if name == "mlp":
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, 256), nn.ReLU(),
            nn.Linear(256, 128), nn.ReLU(),
            nn.Linear(128, 10),
        )
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
            nn.Linear(128, 10),
        )
    raise ValueError("unknown model %r" % name)


def evaluate(model, x, y, batch=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, x.shape[0], batch):
            logits = model(x[i:i + batch])
            correct += (logits.argmax(dim=1) == y[i:i + batch]).sum().item()
    return 100.0 * correct / x.shape[0]


def read_safetensors(path):
    """Reads a safetensors file with json and numpy alone (the safetensors
    package is not packaged for Debian 12 and PyPI is out of reach here):
    8-byte little-endian header length, JSON header, raw little-endian data."""
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = __import__("json").loads(data[8:8 + n])
    buf = data[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        if e["dtype"] != "F32":
            raise ValueError("%s: %s is %s, want F32" % (path, name, e["dtype"]))
        b, end = e["data_offsets"]
        a = np.frombuffer(buf[b:end], dtype="<f4").reshape(e["shape"])
        out[name] = torch.from_numpy(a.copy())
    return out


def main():
    p = argparse.ArgumentParser(description="PyTorch Fashion-MNIST reference")
    p.add_argument("-model", choices=["mlp", "cnn"], required=True)
    p.add_argument("-epochs", type=int, default=1)
    p.add_argument("-eval", default="",
                   help="load this safetensors file (written by lanes' nn.Save) into the model, "
                        "print test_accuracy and exit")
    p.add_argument("-data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("-threads", type=int, default=2)
    p.add_argument("-seed", type=int, default=1)
    p.add_argument("-limit-batches", dest="limit_batches", type=int, default=0,
                   help="stop each epoch after K batches (0 = no limit)")
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    x_train, y_train = load_split(args.data, "train")
    x_test, y_test = load_split(args.data, "t10k")

    model = build_model(args.model)
    if args.eval:
        model.load_state_dict(read_safetensors(args.eval), strict=True)
        print("test_accuracy=%.2f" % evaluate(model, x_test, y_test))
        return
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    batch = 64
    n = x_train.shape[0]

    print("# torch %s threads=%d model=%s" % (torch.__version__, torch.get_num_threads(), args.model), flush=True)

    for epoch in range(1, args.epochs + 1):
        model.train()
        perm = torch.randperm(n)
        total_loss = 0.0
        batches = 0
        t0 = time.perf_counter()
        for i in range(0, n, batch):
            if args.limit_batches > 0 and batches >= args.limit_batches:
                break
            idx = perm[i:i + batch]
            xb, yb = x_train[idx], y_train[idx]
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            total_loss += loss.item()
            batches += 1
        seconds = time.perf_counter() - t0
        acc = evaluate(model, x_test, y_test)
        # Peak resident memory of the process so far (ru_maxrss is in KiB on
        # Linux), as nn/cmd/fashion prints its VmHWM.
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print("epoch=%d seconds=%.2f train_loss=%.4f test_accuracy=%.2f peak_rss_bytes=%d"
              % (epoch, seconds, total_loss / max(batches, 1), acc, rss), flush=True)


if __name__ == "__main__":
    main()
