#!/usr/bin/python3
"""Writes torch24_grad.json: PyTorch's gradients of sum(op(x)·w), w fixed,
for the tape ops of issue 24 at the points where they are delicate (zeros
in Prod and CumProd, a zero norm, ties of the inf-norm, duplicate scatter
targets), for nn/torch24_test.go (which needs no Python).

Run with Debian's python3 (which has torch): /usr/bin/python3 torch24_grad.py"""
import json, torch

torch.manual_seed(2424)
cases = []

def ten(t):
    return {"shape": list(t.shape), "data": t.detach().double().reshape(-1).tolist()}

def add(op, args, inputs, f):
    xs = {k: v.clone().requires_grad_(True) for k, v in inputs.items()}
    y = f(**xs)
    w = torch.randn(y.shape)
    (y * w).sum().backward()
    cases.append({"op": op, "args": args, "inputs": {k: ten(v) for k, v in inputs.items()},
                  "w": ten(w), "y": ten(y), "grads": {k: ten(v.grad) for k, v in xs.items()}})

def zeros(t, *at):
    t.view(-1)[list(at)] = 0
    return t

for name, x in (("none", torch.randn(3, 4)), ("one", zeros(torch.randn(3, 4), 1, 6)), ("two", zeros(torch.randn(3, 4), 0, 2, 5, 7, 8))):
    for axis in (0, 1):
        add("Prod", {"axis": axis}, {"x": x}, lambda x: torch.prod(x, axis))
        add("CumProd", {"axis": axis}, {"x": x}, lambda x: torch.cumprod(x, axis))
add("Prod", {"axis": -1}, {"x": torch.zeros(2, 3)}, lambda x: torch.prod(x, -1))
add("CumSum", {"axis": 1}, {"x": torch.randn(3, 4)}, lambda x: torch.cumsum(x, 1))
xn = zeros(torch.randn(3, 4), 0, 1, 2, 3, 5)  # a zero row, a zero element
xn[2] = torch.tensor([1.0, -3.0, 3.0, 2.0])     # a tie of |x| for the inf-norms
for p in (2, 1, 3, "inf", "-inf"):
    ord = {"inf": float("inf"), "-inf": float("-inf")}.get(p, p)
    add("Norm", {"p": p, "axis": 1}, {"x": xn}, lambda x: torch.linalg.vector_norm(x, ord, dim=1))
xd = torch.randn(4, 5)
add("Sort", {"axis": 1, "descending": True}, {"x": xd}, lambda x: torch.sort(x, 1, descending=True)[0])
add("TopK", {"k": 2, "axis": 0, "largest": False}, {"x": xd}, lambda x: torch.topk(x, 2, 0, largest=False)[0])
add("Median", {"axis": 1}, {"x": xd}, lambda x: torch.median(x, 1)[0])
add("Median", {"axis": 0}, {"x": xd}, lambda x: torch.median(x, 0)[0])
add("Flip", {"axes": [0, 1]}, {"x": xd}, lambda x: torch.flip(x, [0, 1]))
add("Roll", {"shifts": [2, -1], "axes": [1, 0]}, {"x": xd}, lambda x: torch.roll(x, [2, -1], [1, 0]))
add("Tile", {"reps": [2, 1, 3]}, {"x": xd}, lambda x: torch.tile(x, (2, 1, 3)))
mask = torch.randn(1, 5) > 0
add("MaskedSelect", {"mask": mask.float().reshape(-1).tolist(), "maskShape": [1, 5]}, {"x": torch.randn(4, 1)},
    lambda x: torch.masked_select(x, mask))
idx = torch.tensor([[1, 1, 0], [3, 0, 2]])  # target (1, 0) named once per column; no duplicates in a column
add("Scatter", {"axis": 0, "index": idx.float().reshape(-1).tolist(), "indexShape": [2, 3]},
    {"dst": torch.randn(4, 3), "src": torch.randn(2, 3)}, lambda dst, src: dst.scatter(0, idx, src))

with open("torch24_grad.json", "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases}, f, separators=(",", ":"))
print(len(cases), "cases")
