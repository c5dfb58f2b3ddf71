# Generates lossopt.json: PyTorch's losses with their options, computed in
import warnings
warnings.filterwarnings("ignore")
# float64 on float32-rounded inputs, for lossopt_test.go. Run with Debian's
# python3 (which has torch): /usr/bin/python3 lossopt_gen.py > lossopt.json
import json
import torch
import torch.nn.functional as F

g = torch.Generator().manual_seed(24)


def f32(t):
    return t.to(torch.float32).to(torch.float64)


def randn(*s):
    s = tuple(s)
    return f32(torch.randn(s, generator=g, dtype=torch.float64))


def rand(*s):
    s = tuple(s)
    return f32(torch.rand(s, generator=g, dtype=torch.float64))


def labels(shape, c, ignore=None, frac=0.0):
    t = torch.randint(0, c, shape, generator=g).to(torch.float64)
    if ignore is not None:
        m = torch.rand(shape, generator=g) < frac
        t[m] = ignore
    return t


cases = []


def add(name, fn, x, t, call, red, **kw):
    x = x.clone().requires_grad_(True)
    loss = call(x, t, red)
    if red == "none":
        dloss = randn(*loss.shape)
    else:
        dloss = torch.tensor(1.5, dtype=torch.float64)
    loss.backward(dloss)
    c = dict(name=name, fn=fn, reduction=red,
             input=x.detach().flatten().tolist(), input_shape=list(x.shape),
             target=t.flatten().tolist(), target_shape=list(t.shape),
             loss=loss.detach().flatten().tolist(), loss_shape=list(loss.shape),
             dloss=dloss.flatten().tolist(),
             grad=x.grad.flatten().tolist())
    for k, v in kw.items():
        c[k] = v.flatten().tolist() if torch.is_tensor(v) else v
    cases.append(c)


for red in ["mean", "sum", "none"]:
    # NLL, [N, C] and [N, C, d1, d2], weights and ignore_index.
    x = F.log_softmax(randn(5, 4), 1)
    add("nll2d", "NLL", x, labels((5,), 4), lambda x, t, r: F.nll_loss(x, t.long(), reduction=r), red)
    w = rand(4) + 0.5
    x = F.log_softmax(randn(3, 4, 2, 3), 1)
    t = labels((3, 2, 3), 4, ignore=-100, frac=0.3)
    add("nll4d_w_ign", "NLL", x, t, lambda x, t, r: F.nll_loss(x, t.long(), weight=w, reduction=r), red, weight=w)
    t = labels((3, 2, 3), 4, ignore=2, frac=0.3)
    add("nll4d_ign2", "NLL", x, t, lambda x, t, r: F.nll_loss(x, t.long(), ignore_index=2, reduction=r), red, ignore_index=2)
    # CrossEntropy: weights, ignore, smoothing, d..., unbatched.
    x = randn(6, 5)
    add("ce_plain", "CrossEntropy", x, labels((6,), 5), lambda x, t, r: F.cross_entropy(x, t.long(), reduction=r), red)
    w = rand(5) + 0.5
    t = labels((6,), 5, ignore=-100, frac=0.3)
    add("ce_w_ign_ls", "CrossEntropy", x, t,
        lambda x, t, r: F.cross_entropy(x, t.long(), weight=w, label_smoothing=0.2, reduction=r), red,
        weight=w, label_smoothing=0.2)
    x = randn(2, 3, 4, 2)
    t = labels((2, 4, 2), 3, ignore=1, frac=0.25)
    add("ce4d_ign1_ls", "CrossEntropy", x, t,
        lambda x, t, r: F.cross_entropy(x, t.long(), ignore_index=1, label_smoothing=0.1, reduction=r), red,
        ignore_index=1, label_smoothing=0.1)
    x = randn(7)
    add("ce_unbatched", "CrossEntropy", x, torch.tensor(3.0, dtype=torch.float64),
        lambda x, t, r: F.cross_entropy(x, t.long(), reduction=r), red)
    # CrossEntropy with class probabilities (soft targets).
    x = randn(4, 5)
    q = F.softmax(randn(4, 5) * 2, 1)
    add("ce_soft_w_ls", "CrossEntropy", x, q,
        lambda x, t, r: F.cross_entropy(x, t, weight=w, label_smoothing=0.3, reduction=r), red,
        weight=w, label_smoothing=0.3)
    x = randn(2, 3, 2, 2)
    q = F.softmax(randn(2, 3, 2, 2), 1)
    add("ce4d_soft", "CrossEntropy", x, q, lambda x, t, r: F.cross_entropy(x, t, reduction=r), red)
    # Pointwise losses.
    a, b = randn(3, 4) * 2, randn(3, 4) * 2
    add("l1", "L1", a, b, lambda x, t, r: F.l1_loss(x, t, reduction=r), red)
    add("smoothl1", "SmoothL1", a, b, lambda x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.7), red, beta=0.7)
    add("smoothl1_b0", "SmoothL1", a, b, lambda x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.0), red, beta=0.0)
    add("huber", "Huber", a, b, lambda x, t, r: F.huber_loss(x, t, reduction=r, delta=1.3), red, delta=1.3)
    p = rand(4, 5)
    p[0, 0] = 0.0
    q = F.log_softmax(randn(4, 5), 1)
    add("kldiv", "KLDiv", q, p, lambda x, t, r: F.kl_div(x, t, reduction=r), red)
    add("kldiv_log", "KLDiv", q, F.log_softmax(randn(4, 5), 1),
        lambda x, t, r: F.kl_div(x, t, reduction=r, log_target=True), red, log_target=True)
    pr = rand(3, 4) * 0.98 + 0.01
    tt = rand(3, 4)
    w = rand(4) + 0.5
    add("bce", "BCE", pr, tt, lambda x, t, r: F.binary_cross_entropy(x, t, reduction=r), red)
    add("bce_w", "BCE", pr, tt, lambda x, t, r: F.binary_cross_entropy(x, t, weight=w, reduction=r), red, weight=w)
    z = randn(3, 4) * 3
    pw = rand(4) * 3
    add("bcelogits_pw", "BCEWithLogits", z, tt,
        lambda x, t, r: F.binary_cross_entropy_with_logits(x, t, pos_weight=pw, reduction=r), red, pos_weight=pw)

for red in ["batchmean"]:
    p = rand(4, 5)
    q = F.log_softmax(randn(4, 5), 1)
    add("kldiv_bm", "KLDiv", q, p, lambda x, t, r: F.kl_div(x, t, reduction=r), red)

# BCE at the ends: x of 0 and 1 (logs clamped at -100).
x = torch.tensor([0.0, 1.0, 0.0, 1.0, 0.5], dtype=torch.float64)
t = torch.tensor([0.0, 1.0, 1.0, 0.0, 0.25], dtype=torch.float64)
add("bce_ends", "BCE", x, t, lambda x, t, r: F.binary_cross_entropy(x, t, reduction=r), "sum")



def finite(v):
    # JSON has no NaN: non-finite values go as strings ("nan", "inf").
    if isinstance(v, list):
        return [finite(x) for x in v]
    if isinstance(v, float) and v != v or v in (float("inf"), float("-inf")):
        return str(v)
    return v


print(json.dumps([{k: finite(v) for k, v in c.items()} for c in cases]))
