#!/usr/bin/python3
"""Writes optimref.json: PyTorch's optimizer trajectories and learning-rate
schedules, the references of nn's optim_adaptive_test.go and
schedule_test.go. Run with Debian's python3-torch (1.13):

    /usr/bin/python3 nn/testdata/optimref.py > nn/testdata/optimref.json

The optimizers run in float64 from float32-exact starting points and
gradients (lanes steps in float32; the test allows 1e-5 relative). NAdam is
the float64 transcription of PyTorch 2.x's formula (1.13 multiplies mu_t
twice into the next product, a bug fixed in 2.0) and is marked so.
"""
import json
import math

import torch

torch.set_default_dtype(torch.float64)
N, STEPS = 7, 8  # RAdam's rectified branch starts at step 6 for beta2 = 0.999


def f32(x):
    return float(torch.tensor(x, dtype=torch.float32))


def p0(k):
    return [f32(math.sin(1.7 * i + k)) for i in range(N)]


def grads(k):
    # one zero gradient element, a large one, and signs changing over steps
    return [[f32(0.0 if i == 3 else (4.0 if i == 5 else math.cos(0.9 * s + 1.1 * i + k))) for i in range(N)] for s in range(STEPS)]


def run_torch(name, make, groups=None, init=0):
    """groups: list of (size, options) splitting the N elements into
    parameters; default one parameter."""
    sizes = [g[0] for g in groups] if groups else [N]
    start, gs = p0(init), grads(init)
    ps, off = [], 0
    for s in sizes:
        ps.append(torch.tensor(start[off:off + s], requires_grad=True))
        off += s
    if groups:
        opt = make([dict(params=[p], **o) for p, (_, o) in zip(ps, groups)])
    else:
        opt = make(ps)
    traj = []
    for g in gs:
        off = 0
        for p, s in zip(ps, sizes):
            p.grad = torch.tensor(g[off:off + s])
            off += s
        opt.step()
        traj.append([v for p in ps for v in p.detach().tolist()])
    return dict(name=name, source="torch " + torch.__version__, p0=start, grads=gs, want=traj, sizes=sizes)


def nadam_formula(name, lr, b1, b2, eps, wd, md, init=0):
    p, gs = p0(init), grads(init)
    m, v, prod = [0.0] * N, [0.0] * N, 1.0
    traj = []
    for t, g in enumerate(gs, 1):
        mu = b1 * (1 - 0.5 * 0.96 ** (t * md))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * md))
        prod *= mu
        bc2 = 1 - b2 ** t
        for i in range(N):
            gi = g[i] + wd * p[i]
            m[i] = b1 * m[i] + (1 - b1) * gi
            v[i] = b2 * v[i] + (1 - b2) * gi * gi
            d = math.sqrt(v[i] / bc2) + eps
            p[i] += -lr * (1 - mu) / (1 - prod) * gi / d - lr * mu_next / (1 - prod * mu_next) * m[i] / d
        traj.append(list(p))
    return dict(name=name, source="PyTorch 2.x formula in float64", p0=p0(init), grads=gs, want=traj, sizes=[N])


O = torch.optim
optim = [
    run_torch("Adagrad", lambda ps: O.Adagrad(ps, lr=0.05)),
    run_torch("Adagrad/lr_decay+wd+init", lambda ps: O.Adagrad(ps, lr=0.05, lr_decay=0.1, weight_decay=0.05, initial_accumulator_value=0.3, eps=1e-6), init=1),
    run_torch("Adamax", lambda ps: O.Adamax(ps, lr=2e-3)),
    run_torch("Adamax/wd", lambda ps: O.Adamax(ps, lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1), init=2),
    run_torch("RAdam", lambda ps: O.RAdam(ps, lr=1e-2)),
    run_torch("RAdam/wd", lambda ps: O.RAdam(ps, lr=1e-2, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.1), init=3),
    run_torch("Adam/amsgrad", lambda ps: O.Adam(ps, lr=1e-2, amsgrad=True)),
    run_torch("AdamW/amsgrad", lambda ps: O.AdamW(ps, lr=1e-2, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True), init=4),
    run_torch("SGD/groups", lambda gs: O.SGD(gs, lr=0.1, momentum=0.9, weight_decay=0.01),
              groups=[(3, {}), (4, dict(lr=0.025, weight_decay=0.0))], init=5),
    run_torch("Adam/groups", lambda gs: O.Adam(gs, lr=1e-2, weight_decay=0.1),
              groups=[(2, dict(lr=0.02)), (5, dict(weight_decay=0.5))], init=6),
    nadam_formula("NAdam", 2e-3, 0.9, 0.999, 1e-8, 0.0, 4e-3),
    nadam_formula("NAdam/wd", 1e-2, 0.8, 0.99, 1e-6, 0.1, 0.05, init=7),
]


def lrs(make, n, metrics=None):
    p = torch.zeros(1, requires_grad=True)
    opt = O.SGD([p], lr=1.0)
    s = make(opt)
    out = []
    for k in range(n):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        if metrics is None:
            s.step()
        else:
            s.step(metrics[k])
    return out


S = O.lr_scheduler
plateau_metrics = [1.0, 0.9, 0.95, 0.9, 0.91, 0.9, 0.9, 0.89999, 0.5, 0.6, 0.7, 0.8, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.4]
schedules = [
    dict(name="OneCycle", lr=lrs(lambda o: S.OneCycleLR(o, max_lr=0.1, total_steps=20), 20)),
    dict(name="OneCycle/linear+pct+div", lr=lrs(lambda o: S.OneCycleLR(o, max_lr=0.5, total_steps=17, pct_start=0.4, anneal_strategy="linear", div_factor=10, final_div_factor=100), 17)),
    dict(name="OneCycle/three_phase", lr=lrs(lambda o: S.OneCycleLR(o, max_lr=0.2, total_steps=23, three_phase=True), 23)),
    dict(name="CosineWarmRestarts", lr=lrs(lambda o: S.CosineAnnealingWarmRestarts(o, T_0=5, eta_min=0.01), 17)),
    dict(name="CosineWarmRestarts/T_mult", lr=lrs(lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.0), 30)),
    dict(name="LinearLR", lr=lrs(lambda o: S.LinearLR(o, start_factor=0.25, total_iters=6), 10)),
    dict(name="Plateau/min", metrics=plateau_metrics, lr=lrs(lambda o: S.ReduceLROnPlateau(o, patience=2), 20, plateau_metrics)),
    dict(name="Plateau/min+abs+cooldown", metrics=plateau_metrics, lr=lrs(lambda o: S.ReduceLROnPlateau(o, factor=0.5, patience=1, threshold=0.05, threshold_mode="abs", cooldown=2, min_lr=0.3), 20, plateau_metrics)),
    dict(name="Plateau/max+rel", metrics=[-m for m in plateau_metrics], lr=lrs(lambda o: S.ReduceLROnPlateau(o, mode="max", factor=0.3, patience=0, threshold=0.01), 20, [-m for m in plateau_metrics])),
]
print(json.dumps(dict(optim=optim, schedules=schedules), indent=1))
