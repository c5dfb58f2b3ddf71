#!/usr/bin/env python3
"""Same-run PyTorch anchor for tensor's depthwise Conv2D and ConvTranspose2D.

conv2d with groups == channels (3x3, padding 1: the MobileNet block) on
[32, 256, 28, 28], forward and forward+backward (input, weight and bias
gradients), and conv_transpose2d (stride 2, padding 1, output_padding 1),
on 2 threads. It prints Go benchmark lines with the names of tensor's
BenchmarkDepthwiseConv2D and BenchmarkConvTranspose2D, so that benchstat
compares the two:

    go test -run X -bench 'DepthwiseConv2D|ConvTranspose2D' -count 6 ./tensor/ > lanes.txt
    /usr/bin/python3 bench/torchref/depthwise.py -count 6 > torch.txt
    benchstat torch.txt lanes.txt
"""
import argparse
import time

import torch
import torch.nn.functional as F

# name, x shape, weight shape, conv kwargs, transposed
CASES = [
    ("DepthwiseConv2D/32x256x28x28/k3p1", (32, 256, 28, 28), (256, 1, 3, 3), dict(padding=1, groups=256), False),
    ("ConvTranspose2D/16x64x28x28/k3s2p1op1", (16, 64, 28, 28), (64, 32, 3, 3), dict(stride=2, padding=1, output_padding=1), True),
]


def bench(name, xs, ws, kw, transposed, count, min_time):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(xs, generator=g).requires_grad_()
    w = torch.randn(ws, generator=g).requires_grad_()
    c = ws[1] * kw.get("groups", 1) if transposed else ws[0]
    b = torch.randn(c, generator=g).requires_grad_()
    f = F.conv_transpose2d if transposed else F.conv2d
    with torch.no_grad():
        dout = torch.randn(f(x, w, b, **kw).shape, generator=g)

    def fwd():
        with torch.no_grad():
            f(x, w, b, **kw)

    def fwdbwd():
        for t in (x, w, b):
            t.grad = None
        f(x, w, b, **kw).backward(dout)

    for suffix, step in (("fwd", fwd), ("fwd+bwd", fwdbwd)):
        step()  # warm up
        for _ in range(count):
            n, t = 0, 0.0
            start = time.perf_counter()
            while t < min_time:
                step()
                n += 1
                t = time.perf_counter() - start
            print("Benchmark%s/%s-2\t%8d\t%12.0f ns/op" % (name, suffix, n, t / n * 1e9), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-count", type=int, default=1)
    ap.add_argument("-benchtime", type=float, default=1.0, help="seconds per measurement")
    ap.add_argument("-threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print("goos: linux\ngoarch: amd64\npkg: torchref (torch %s, %d threads)" % (torch.__version__, a.threads))
    for c in CASES:
        bench(*c, a.count, a.benchtime)


if __name__ == "__main__":
    main()
