#!/usr/bin/env python3
"""Same-run PyTorch reference for the Go command nn/cmd/chargpt.

The model (nanoGPT's GPT, with lanes' nn.GPT state_dict names), its
initialization (nanoGPT's _init_weights, or lanes' own with -init FILE, a
safetensors file written by `chargpt -steps 0 -save FILE`), the optimizer
(AdamW in two groups, weight decay on the Linears' matrices only), the
schedule (nanoGPT's get_lr: linear warmup, cosine decay), the gradient
clipping, the corpus, its split and the batches are those of the Go command
(nn/cmd/chargpt/data.go states the data rules; they are reproduced here line
for line, and the Go test TestPythonCrossCheck compares the two). It prints
the same lines:

    step=S tokens=N seconds=T tokens_per_s=R lr=L train_loss=A val_loss=V
    generate tokens=N seconds=T tokens_per_s=R

Generation (-sample N) is nanoGPT's generate: batch 1, eager, no KV cache,
each new byte a forward pass over the last Context bytes.

Run with the system Python (torch 1.13 + numpy):
    /usr/bin/python3 bench/torchref/chargpt.py -steps 200 -sample 500
"""
import argparse
import json
import math
import os
import stat
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fashion import read_safetensors  # noqa: E402  (one reader for both scripts)

VOCAB = 256
GOLDEN = 0x9E3779B97F4A7C15
VAL_STREAM = 0x5851F42D4C957F2D
MASK64 = (1 << 64) - 1


# ---- data: nn/cmd/chargpt/data.go, rule for rule ----

def go_source():
    out = subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True, check=True)
    return os.path.join(out.stdout.strip(), "src")


def load_corpus(root):
    """Every regular .go file under root (links neither followed nor read),
    sorted by slash path relative to root as bytes; file i is validation
    when i % 10 == 9; each part is its files' bytes concatenated."""
    files = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in filenames:
            path = os.path.join(dirpath, name)
            if name.endswith(".go") and stat.S_ISREG(os.lstat(path).st_mode):
                files.append(os.path.relpath(path, root).replace(os.sep, "/"))
    if not files:
        raise SystemExit("no .go file under %s" % root)
    files.sort(key=os.fsencode)
    train, val = bytearray(), bytearray()
    for i, f in enumerate(files):
        with open(os.path.join(root, f), "rb") as fh:
            (val if i % 10 == 9 else train).extend(fh.read())
    return files, np.frombuffer(bytes(train), dtype=np.uint8), np.frombuffer(bytes(val), dtype=np.uint8)


def mix64(z):
    """SplitMix64's output function on a uint64 array (wrapping)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def offsets(seed, step, batch, n, w):
    """The window starts of a step's batch: draws step*batch .. step*batch+batch-1
    of the stream of seed, modulo n-w+1 (data.go's offset)."""
    k = np.arange(step * batch, step * batch + batch, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(seed & MASK64) + (k + np.uint64(1)) * np.uint64(GOLDEN)
        return (mix64(z) % np.uint64(n - w + 1)).astype(np.int64)


def get_batch(text, seed, step, batch, t):
    o = offsets(seed, step, batch, len(text), t + 1)
    idx = o[:, None] + np.arange(t + 1)[None, :]
    win = torch.from_numpy(text[idx].astype(np.int64))
    return win[:, :-1], win[:, 1:]


# ---- the model: nanoGPT's, with nn.GPT's names ----

def rope_tables(n, hd):
    half = hd // 2
    p = np.arange(n, dtype=np.float64)[:, None]
    a = p * np.power(10000.0, -2 * np.arange(half, dtype=np.float64) / hd)[None, :]
    cos, sin = np.cos(a).astype(np.float32), np.sin(a).astype(np.float32)
    return torch.from_numpy(np.concatenate([cos, cos], 1)), torch.from_numpy(np.concatenate([sin, sin], 1))


def rope(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["width"]
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.heads, self.rope = cfg["heads"], cfg["rope"]
        self.attn_dropout = nn.Dropout(cfg["dropout"])
        self.resid_dropout = nn.Dropout(cfg["dropout"])
        n = cfg["context"]
        self.register_buffer("bias", torch.tril(torch.ones(n, n)).view(1, 1, n, n), persistent=False)
        if self.rope:
            cos, sin = rope_tables(n, d // self.heads)
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.rope:
            q, k = rope(q, self.cos[:t], self.sin[:t]), rope(k, self.cos[:t], self.sin[:t])
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["width"]
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj = nn.Linear(4 * d, d)
        self.dropout = nn.Dropout(cfg["dropout"])

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))  # the erf GELU, as lanes'


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg["width"])
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg["width"])
        self.mlp = MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d = cfg["width"]
        mods = dict(wte=nn.Embedding(VOCAB, d), drop=nn.Dropout(cfg["dropout"]),
                    h=nn.ModuleList([Block(cfg) for _ in range(cfg["layers"])]), ln_f=nn.LayerNorm(d))
        if not cfg["rope"]:
            mods["wpe"] = nn.Embedding(cfg["context"], d)
        self.transformer = nn.ModuleDict(mods)
        self.lm_head = nn.Linear(d, VOCAB, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied, as lanes' TieWeights
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg["layers"]))

    @staticmethod
    def _init_weights(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)

    def forward(self, idx):
        b, t = idx.shape
        x = self.transformer.wte(idx)
        if "wpe" in self.transformer:
            x = x + self.transformer.wpe(torch.arange(t))
        x = self.transformer.drop(x)
        for blk in self.transformer.h:
            x = blk(x)
        return self.lm_head(self.transformer.ln_f(x))

    def lanes_state(self):
        """The state_dict under lanes' names: the tied head listed once."""
        return {k: v for k, v in self.state_dict().items() if k != "lm_head.weight"}

    def load_lanes(self, tensors):
        """Loads a lanes file: a model (nn.Save) or a checkpoint, whose
        optimizer state ("optim.*") is left out."""
        tensors = {k: v for k, v in tensors.items() if not k.startswith("optim.")}
        missing, unexpected = self.load_state_dict(tensors, strict=False)
        if unexpected or [m for m in missing if m != "lm_head.weight"]:
            raise SystemExit("state mismatch: missing %s, unexpected %s" % (missing, unexpected))
        self.lm_head.weight = self.transformer.wte.weight


def write_safetensors(path, tensors, metadata=None):
    """Writes F32 tensors in the safetensors format with json alone (the
    safetensors package is not packaged for Debian 12), atomically."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        a = tensors[name].detach().contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [off, off + len(a)]}
        blobs.append(a)
        off += len(a)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for a in blobs:
            f.write(a)
    os.replace(tmp, path)


def get_lr(it, a):
    """nanoGPT's get_lr (lanes' nn.WarmupCosine)."""
    if it < a.warmup:
        return a.lr * (it + 1) / (a.warmup + 1)
    if it > a.steps:
        return a.min_lr
    if a.steps <= a.warmup:
        return a.lr
    ratio = (it - a.warmup) / (a.steps - a.warmup)
    return a.min_lr + (a.lr - a.min_lr) * 0.5 * (1.0 + math.cos(math.pi * ratio))


def configure_optimizer(model, a):
    """AdamW over two groups, as nn.DecayGroups splits them: the matrices of
    the Linears decay; biases, LayerNorms and embeddings (the tied head with
    them) do not. Each group in parameter order."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():  # the tied weight once, as wte
        emb = name.startswith("transformer.wte.") or name.startswith("transformer.wpe.")
        (decay if p.dim() >= 2 and not emb else no_decay).append(p)
    return torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=a.lr, betas=(0.9, a.beta2), eps=1e-8)


@torch.no_grad()
def eval_loss(model, val, a):
    model.eval()
    total = 0.0
    for i in range(a.eval_batches):
        x, y = get_batch(val, a.seed ^ VAL_STREAM, i, a.batch, a.context)
        total += F.cross_entropy(model(x).view(-1, VOCAB), y.reshape(-1)).item()
    model.train()
    return total / a.eval_batches


@torch.no_grad()
def generate(model, prompt, n, temperature, top_k, gen):
    """nanoGPT's generate, batch 1: eager, no KV cache."""
    model.eval()
    ctx = model.cfg["context"]
    ids = list(prompt.encode()) or [10]
    idx = torch.tensor([ids[-(ctx - 1):]], dtype=torch.long)
    out = []
    start = time.perf_counter()
    for _ in range(n):
        logits = model(idx[:, -ctx:])[:, -1, :]
        if temperature == 0:
            nxt = logits.argmax(-1, keepdim=True)
        else:
            logits = logits / temperature
            if top_k:
                v, _ = torch.topk(logits, min(top_k, VOCAB))
                logits[logits < v[:, [-1]]] = -float("inf")
            nxt = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=gen)
        idx = torch.cat([idx, nxt], dim=1)
        out.append(int(nxt))
    return out, time.perf_counter() - start


def main():
    p = argparse.ArgumentParser(description="PyTorch reference of nn/cmd/chargpt")
    p.add_argument("-data", default="", help="corpus directory (default $(go env GOROOT)/src)")
    p.add_argument("-steps", type=int, default=2000)
    p.add_argument("-batch", type=int, default=32)
    p.add_argument("-context", type=int, default=128)
    p.add_argument("-layers", type=int, default=4)
    p.add_argument("-heads", type=int, default=4)
    p.add_argument("-width", type=int, default=128)
    p.add_argument("-dropout", type=float, default=0.0)
    p.add_argument("-rope", action="store_true")
    p.add_argument("-lr", type=float, default=1e-3)
    p.add_argument("-min-lr", dest="min_lr", type=float, default=1e-4)
    p.add_argument("-warmup", type=int, default=100)
    p.add_argument("-weight-decay", dest="weight_decay", type=float, default=0.1)
    p.add_argument("-beta2", type=float, default=0.99)
    p.add_argument("-clip", type=float, default=1.0)
    p.add_argument("-seed", type=int, default=1)
    p.add_argument("-eval-every", dest="eval_every", type=int, default=100)
    p.add_argument("-eval-batches", dest="eval_batches", type=int, default=20)
    p.add_argument("-init", default="", help="start from this safetensors file (chargpt -steps 0 -save FILE)")
    p.add_argument("-save", default="", help="write the trained model (lanes' names) to this safetensors file")
    p.add_argument("-sample", type=int, default=0, help="then generate this many bytes (no KV cache)")
    p.add_argument("-prompt", default="package main\n\n")
    p.add_argument("-temperature", type=float, default=0.8)
    p.add_argument("-topk", type=int, default=0)
    p.add_argument("-threads", type=int, default=2)
    p.add_argument("-describe", action="store_true",
                   help="print the corpus and the first -steps batches' offsets as JSON and exit (the Go tests' cross-check)")
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    root = a.data or go_source()
    files, train, val = load_corpus(root)
    if a.describe:
        print(json.dumps({
            "files": len(files), "train": len(train), "val": len(val),
            "train_sum": int(train.astype(np.uint64).sum()), "val_sum": int(val.astype(np.uint64).sum()),
            "offsets": [offsets(a.seed, s, a.batch, len(train), a.context + 1).tolist() for s in range(a.steps)],
            "val_offsets": [offsets(a.seed ^ VAL_STREAM, s, a.batch, len(val), a.context + 1).tolist()
                            for s in range(a.eval_batches)],
        }))
        return
    print("corpus %s: %d files, %d training bytes, %d validation bytes (%d files)"
          % (root, len(files), len(train), len(val), sum(1 for i in range(len(files)) if i % 10 == 9)),
          file=sys.stderr)

    cfg = dict(context=a.context, layers=a.layers, heads=a.heads, width=a.width, dropout=a.dropout, rope=a.rope)
    model = GPT(cfg)
    if a.init:
        model.load_lanes(read_safetensors(a.init))
    opt = configure_optimizer(model, a)
    tokens, train_time, loss_sum, loss_n, lr = 0, 0.0, 0.0, 0, a.lr
    for step in range(a.steps):
        start = time.perf_counter()
        lr = get_lr(step, a)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch(train, a.seed, step, a.batch, a.context)
        loss = F.cross_entropy(model(x).view(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step()
        loss_sum += loss.item()
        loss_n += 1
        train_time += time.perf_counter() - start
        tokens += a.batch * a.context
        done = step + 1
        if done % a.eval_every == 0 or done == a.steps:
            v = eval_loss(model, val, a)
            print("step=%d tokens=%d seconds=%.2f tokens_per_s=%.0f lr=%.3g train_loss=%.4f val_loss=%.4f"
                  % (done, tokens, train_time, tokens / train_time, lr, loss_sum / loss_n, v), flush=True)
            loss_sum, loss_n = 0.0, 0
    if a.save:
        write_safetensors(a.save, model.lanes_state(), {"format": "pt"})
    if a.sample > 0:
        gen = torch.Generator().manual_seed(a.seed)
        ids, secs = generate(model, a.prompt, a.sample, a.temperature, a.topk, gen)
        print(a.prompt + bytes(ids).decode("utf-8", errors="replace"))
        print("generate tokens=%d seconds=%.3f tokens_per_s=%.0f (eager, no KV cache, batch 1)"
              % (len(ids), secs, len(ids) / secs), file=sys.stderr)


if __name__ == "__main__":
    main()
