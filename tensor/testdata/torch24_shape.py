#!/usr/bin/python3
"""Writes torch24_shape.json: PyTorch's outputs of the sorts, scans,
products, norms, reorderings, masks and scatters of issue 24 on small
float32 inputs, for tensor/torch24_test.go (which needs no Python).

Run with Debian's python3 (which has torch): /usr/bin/python3 torch24_shape.py
Values are float32 written as float64 numbers (exact); NaN and infinities
as the strings "nan", "inf", "-inf". Indices are compared only where
PyTorch specifies them (no ties, or stable=True)."""
import json, math, torch

torch.manual_seed(24)
cases = []

def enc(t):
    t = t.detach().to(torch.float64).reshape(-1).tolist()
    return [("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")) if not math.isfinite(v) else v for v in t]

def ten(t):
    return {"shape": list(t.shape), "data": enc(t)}

def add(op, args, inputs, outputs):
    cases.append({"op": op, "args": args, "inputs": {k: ten(v) for k, v in inputs.items()},
                  "outputs": {k: ten(v) for k, v in outputs.items()}})

def ties(*shape):
    x = torch.round(torch.randn(*shape) * 2) / 2
    x.view(-1)[::7] = float("nan")
    x.view(-1)[3::11] = float("inf")
    x.view(-1)[5::13] = float("-inf")
    return x

x = torch.randn(4, 6)
xt = ties(5, 6)
for inp, name in ((x, "plain"), (xt, "ties")):
    for dim in (0, 1, -1):
        for desc in (False, True):
            v, i = torch.sort(inp, dim=dim, descending=desc, stable=True)
            add("Sort", {"axis": dim, "descending": desc}, {"x": inp}, {"values": v, "indices": i.float()})
            add("ArgSort", {"axis": dim, "descending": desc}, {"x": inp},
                {"indices": torch.argsort(inp, dim=dim, descending=desc, stable=True).float()})
        for k in (0, 1, 3):
            for largest in (True, False):
                v, i = torch.topk(inp, k, dim=dim, largest=largest, sorted=True)
                out = {"values": v}
                if name == "plain":
                    out["indices"] = i.float()
                add("TopK", {"k": k, "axis": dim, "largest": largest}, {"x": inp}, out)
        for keep in (False, True):
            v, i = torch.median(inp, dim=dim, keepdim=keep)
            out = {"values": v}
            if name == "plain":
                out["indices"] = i.float()
            add("Median", {"axis": dim, "keepdims": keep}, {"x": inp}, out)
        add("CumSum", {"axis": dim}, {"x": inp}, {"y": torch.cumsum(inp, dim)})
        add("CumProd", {"axis": dim}, {"x": inp}, {"y": torch.cumprod(inp, dim)})

# Median of a row with NaN: NaN at the first NaN's index.
xn = torch.tensor([[1.0, float("nan"), 3.0, float("nan")], [4.0, 1.0, 3.0, 2.0]])
v, i = torch.median(xn, dim=1)
add("Median", {"axis": 1, "keepdims": False}, {"x": xn}, {"values": v, "indices": i.float()})

x3 = torch.randn(2, 3, 4)
x3.view(-1)[::5] = 0
for axes in ([], [0], [1], [-1], [0, 2]):
    for keep in (False, True):
        d = axes if axes else None
        if len(axes) <= 1:
            pd = torch.prod(x3, dim=axes[0], keepdim=keep) if axes else torch.prod(x3)
            if not axes and keep:
                pd = pd.reshape(1, 1, 1)
            add("Prod", {"axes": axes, "keepdims": keep}, {"x": x3}, {"y": pd})
        for p in (2, 1, 3, 0.5, 0, float("inf"), float("-inf")):
            add("Norm", {"p": "inf" if p == float("inf") else ("-inf" if p == float("-inf") else p), "axes": axes, "keepdims": keep},
                {"x": x3}, {"y": torch.linalg.vector_norm(x3, ord=p, dim=d, keepdim=keep)})
        b = x3 != 0
        anyv, allv = b, b
        red = sorted({a % 3 for a in axes}) if axes else [0, 1, 2]
        for a in red:
            anyv, allv = anyv.any(dim=a, keepdim=True), allv.all(dim=a, keepdim=True)
        if not keep:
            shape = [d for i, d in enumerate(x3.shape) if i not in red]
            anyv, allv = anyv.reshape(shape), allv.reshape(shape)
        add("Any", {"axes": axes, "keepdims": keep}, {"x": x3}, {"y": anyv.float()})
        add("All", {"axes": axes, "keepdims": keep}, {"x": x3}, {"y": allv.float()})
big = torch.tensor([3e30, -4e30, 1e-30])
small = torch.tensor([3e-30, 4e-30, 0.0])
for v in (big, small):
    for p in (2, 3, float("inf")):
        add("Norm", {"p": "inf" if p == float("inf") else p, "axes": [], "keepdims": False}, {"x": v},
            {"y": torch.linalg.vector_norm(v.double(), ord=p).float()})

for axes in ([0], [1, 2], [-1, 0], []):
    add("Flip", {"axes": axes}, {"x": x3}, {"y": torch.flip(x3, axes)})
for shifts, axes in (([1], []), ([-5], []), ([2], [1]), ([1, -1], [0, 2]), ([7, 3], [2, 2])):
    y = torch.roll(x3, shifts, axes) if axes else torch.roll(x3, shifts[0])
    add("Roll", {"shifts": shifts, "axes": axes}, {"x": x3}, {"y": y})
x2 = torch.randn(2, 3)
for reps in ((2,), (2, 2), (1, 3, 2), (0, 2), ()):
    add("Tile", {"reps": list(reps)}, {"x": x2}, {"y": torch.tile(x2, reps)})

m = torch.randn(1, 3, 4) > 0
add("MaskedSelect", {}, {"x": x3, "mask": m.float()}, {"y": torch.masked_select(x3, m)})
mb = torch.randn(4) > 0
xs = torch.randn(3, 1)
add("MaskedSelect", {}, {"x": xs, "mask": mb.float()}, {"y": torch.masked_select(xs, mb)})
add("MaskedFill", {"value": -2.5}, {"x": x3, "mask": m.float()}, {"y": x3.masked_fill(m, -2.5)})

dst = torch.randn(4, 5)
idx = torch.tensor([[2, 0, 1, 3, 0], [1, 3, 2, 0, 2]])
src = torch.randn(2, 5)
add("Scatter", {"axis": 0}, {"dst": dst, "index": idx.float(), "src": src}, {"y": dst.clone().scatter_(0, idx, src)})
idx1 = torch.tensor([[4, 0, 2], [1, 1, 3], [0, 2, 4], [3, 3, 1]])  # repeats: summed by ScatterAdd
src1 = torch.randn(4, 3)
add("ScatterAdd", {"axis": 1}, {"dst": dst, "index": idx1.float(), "src": src1}, {"y": dst.clone().scatter_add_(1, idx1, src1)})
ii = torch.tensor([3, 0, 3, 1])
srci = torch.randn(4, 5)
add("IndexAdd", {"axis": 0}, {"dst": dst, "index": ii.float(), "src": srci}, {"y": dst.clone().index_add_(0, ii, srci)})

with open("torch24_shape.json", "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
print(len(cases), "cases")
