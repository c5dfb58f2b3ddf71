#!/usr/bin/env python3
"""Same-run PyTorch anchor for tensor.ScaledDotProductAttention.

softmax(q·kᵀ/√d + mask)·v in torch ops (1.13 has no fused attention), forward
plus backward, on 2 threads. It prints Go benchmark lines with the names of
tensor's BenchmarkScaledDotProductAttention, so that benchstat compares the two:

    go test -run X -bench ScaledDotProductAttention -count 6 ./tensor/ > lanes.txt
    /usr/bin/python3 bench/torchref/attention.py -count 6 > torch.txt
    benchstat torch.txt lanes.txt

With -peak it runs one shape once in this process and prints the process's
peak resident memory growth over the run (ru_maxrss), in bytes: the
[B, H, S, S] scores and probabilities the composition keeps for backward.
"""
import argparse
import math
import resource
import time

import torch

SHAPES = [((8, 4, 512, 32), True), ((8, 4, 512, 32), False), ((1, 1, 4096, 64), True)]


def name(shape, causal):
    n = "x".join(str(d) for d in shape)
    if causal:
        n += "/causal"
    return "BenchmarkScaledDotProductAttention/%s/fwd+bwd-2" % n


def step(q, k, v, dout, mask):
    s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    out = torch.matmul(torch.softmax(s, dim=-1), v)
    out.backward(dout)


def operands(shape, causal):
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(shape, generator=g).requires_grad_() for _ in range(3))
    dout = torch.randn(shape, generator=g)
    s = shape[2]
    mask = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1) if causal else None
    return q, k, v, dout, mask


def bench(shape, causal, count, min_time):
    q, k, v, dout, mask = operands(shape, causal)
    step(q, k, v, dout, mask)  # warm up
    for _ in range(count):
        n, t = 0, 0.0
        start = time.perf_counter()
        while t < min_time:
            for x in (q, k, v):
                x.grad = None
            step(q, k, v, dout, mask)
            n += 1
            t = time.perf_counter() - start
        print("%s\t%8d\t%12.0f ns/op" % (name(shape, causal), n, t / n * 1e9), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-count", type=int, default=1)
    ap.add_argument("-benchtime", type=float, default=1.0, help="seconds per measurement")
    ap.add_argument("-threads", type=int, default=2)
    ap.add_argument("-peak", default="", help="B,H,S,D: measure peak memory of one causal step")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.peak:
        shape = tuple(int(x) for x in a.peak.split(","))
        q, k, v, dout, mask = operands(shape, True)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        step(q, k, v, dout, mask)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print("torch peak RSS growth for one causal forward+backward %s: %d bytes" % (shape, (after - before) * 1024))
        return
    print("goos: linux\ngoarch: amd64\npkg: torchref (torch %s, %d threads)" % (torch.__version__, a.threads))
    for shape, causal in SHAPES:
        bench(shape, causal, a.count, a.benchtime)


if __name__ == "__main__":
    main()
