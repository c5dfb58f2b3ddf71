#!/usr/bin/env python3
"""Writes torch.json: PyTorch's values for TestPadTorch and TestAdaptivePoolTorch.

    /usr/bin/python3 tensor/testdata/conv24/gen.py > tensor/testdata/conv24/torch.json

Inputs are small integers and halves so that every value is exact in float32
(the means of adaptive average pooling are compared within a tolerance).
"""
import json

import torch
import torch.nn.functional as F

g = torch.Generator().manual_seed(24)


def ints(shape):
    return (torch.randint(-8, 8, shape, generator=g).float() / 2).requires_grad_()


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


cases = []
pads = [
    ((1, 1, 4), (2, 1), "reflect", 0),
    ((1, 1, 4), (2, 1), "replicate", 0),
    ((1, 1, 4), (2, 1), "circular", 0),
    ((1, 1, 4), (2, 1), "constant", 9),
    ((1, 1, 4), (-1, 2), "constant", 0),
    ((2, 3, 4), (3, 0), "replicate", 0),
    ((1, 2, 3, 4), (1, 2, 2, 1), "reflect", 0),
    ((1, 2, 3, 4), (3, 0, 1, 2), "replicate", 0),
    ((1, 2, 3, 4), (2, 1, 3, 0), "circular", 0),
    ((1, 1, 2, 3, 4), (1, 2, 1, 1, 1, 0), "reflect", 0),
    ((2, 3, 4), (1, -1, 0, 2, -1, 1), "constant", -0.5),
    ((1, 2, 3, 4), (-1, 1, 1, -1), "circular", 0),
    ((1, 2, 3, 4), (-1, 2, 0, -2), "reflect", 0),
    ((0, 2, 3), (1, 1), "constant", 1),
]
for shape, p, mode, value in pads:
    x = ints(shape)
    try:
        y = F.pad(x, p, mode=mode, value=value) if mode == "constant" else F.pad(x, p, mode=mode)
    except Exception as e:  # a case PyTorch refuses is left out
        import sys
        print("skipped", shape, p, mode, e, file=sys.stderr)
        continue
    dy = ints(y.shape).detach()
    y.backward(dy)
    cases.append(dict(op="Pad", shape=list(shape), pads=list(p), mode=mode, value=value,
                      x=flat(x), out=list(y.shape), y=flat(y), dy=flat(dy), dx=flat(x.grad)))

for shape, out in [((2, 3, 7, 5), (3, 2)), ((2, 3, 7, 5), (7, 5)), ((1, 2, 4, 6), (1, 1)),
                   ((1, 2, 5, 7), (4, 3)), ((3, 5, 9), (2, 4)), ((1, 1, 3, 3), (5, 4))]:
    for op in ("AdaptiveAvgPool2D", "AdaptiveMaxPool2D"):
        x = ints(shape)
        if op == "AdaptiveAvgPool2D":
            y, idx = F.adaptive_avg_pool2d(x, out), None
        else:
            y, idx = F.adaptive_max_pool2d(x, out, return_indices=True)
        dy = ints(y.shape).detach()
        y.backward(dy)
        c = dict(op=op, shape=list(shape), outsize=list(out), x=flat(x), out=list(y.shape), y=flat(y),
                 dy=flat(dy), dx=flat(x.grad))
        if idx is not None:
            c["idx"] = [float(v) for v in idx.reshape(-1).tolist()]
        cases.append(c)

print(json.dumps(cases))
