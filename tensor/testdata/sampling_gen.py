# Generates sampling.json: PyTorch's affine_grid, grid_sample and
# interpolate with their gradients, in float64 on float32-rounded inputs,
# for gridsample_test.go. Run with Debian's python3 (which has torch):
#   /usr/bin/python3 sampling_gen.py > sampling.json
import json
import warnings

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore")
g = torch.Generator().manual_seed(24)


def f32(t):
    return t.to(torch.float32).to(torch.float64)


def randn(*s):
    return f32(torch.randn(tuple(s), generator=g, dtype=torch.float64))


def rand(*s):
    return f32(torch.rand(tuple(s), generator=g, dtype=torch.float64))


def flat(t):
    return t.detach().flatten().tolist()


cases = []

for align in [False, True]:
    theta = randn(2, 2, 3).requires_grad_(True)
    size = [2, 3, 4, 5]
    grid = F.affine_grid(theta, size, align_corners=align)
    dgrid = randn(*grid.shape)
    grid.backward(dgrid)
    cases.append(dict(fn="AffineGrid", align=align, theta=flat(theta), size=size,
                      out=flat(grid), dout=flat(dgrid), dtheta=flat(theta.grad)))

for mode in ["bilinear", "nearest"]:
    for pad in ["zeros", "border", "reflection"]:
        for align in [False, True]:
            x = randn(2, 3, 5, 6).requires_grad_(True)
            lim = 2.5 if pad == "reflection" else 1.3  # reflection: several flips
            grid = (rand(2, 4, 3, 2) * 2 * lim - lim).requires_grad_(True)
            y = F.grid_sample(x, grid, mode=mode, padding_mode=pad, align_corners=align)
            dy = randn(*y.shape)
            y.backward(dy)
            cases.append(dict(fn="GridSample", mode=mode, padding=pad, align=align,
                              input=flat(x), input_shape=list(x.shape), grid=flat(grid), grid_shape=list(grid.shape),
                              out=flat(y), out_shape=list(y.shape), dout=flat(dy),
                              dinput=flat(x.grad), dgrid=flat(grid.grad)))

for mode, size, scale, align in [
    ("nearest", (8, 4), None, None),
    ("nearest", (3, 7), None, None),
    ("nearest", None, (2.0, 1.5), None),
    ("nearest", None, (0.6, 1.3), None),
    ("bilinear", (9, 3), None, False),
    ("bilinear", (9, 3), None, True),
    ("bilinear", (1, 4), None, True),
    ("bilinear", None, (1.7, 0.6), False),
    ("bilinear", None, (1.7, 0.6), True),
    ("bilinear", None, (2.0, 2.0), False),
    ("nearest", None, (1.1, 1.05), None),  # out = in: a copy
    ("bilinear", None, (1.1, 1.05), False),
    ("nearest", None, (2.1, 2.05), None),  # out = 2·in: o/2
    ("nearest-exact", (8, 4), None, None),
    ("nearest-exact", None, (0.6, 1.3), None),
    ("bicubic", (8, 9), None, False),
    ("bicubic", (8, 9), None, True),
    ("bicubic", None, (1.6, 0.7), False),
    ("bicubic", (3, 2), None, True),
]:
    x = randn(2, 2, 5, 7).requires_grad_(True)
    y = F.interpolate(x, size=size, scale_factor=scale, mode=mode, align_corners=align)
    dy = randn(*y.shape)
    y.backward(dy)
    # PyTorch 1.13's nearest with a scale factor that gives out = in or
    # 2·in: the forward for these [2, 2, ...] inputs reads floor(o·scale),
    # but the backward copies (out = in) or halves o (out = 2·in), its
    # kernels' special cases: not the forward's adjoint; the test skips its
    # gradient there.
    quirk = mode == "nearest" and scale is not None and any(
        int(n * s) in (n, 2 * n) and s not in (1.0, 2.0) for n, s in zip(x.shape[2:], scale))
    cases.append(dict(fn="Interpolate", mode=mode, size=list(size) if size else [0, 0],
                      scale=list(scale) if scale else [0, 0], align=bool(align),
                      input=flat(x), input_shape=list(x.shape), out=flat(y), out_shape=list(y.shape),
                      dout=flat(dy), dinput=flat(x.grad), torch_grad_quirk=quirk))

print(json.dumps(cases))
