#!/usr/bin/env python3
"""Peer timings of masked, scaled attention softmax on CUDA, for comparison
with `vksoftmax bench --attention mask|causal`.

The tensor is (batch, heads, n, n) seen as rows x n (rows = batch x heads x
n), softmax(x * s + mask, -1) with s = 1/sqrt(128) and an fp16 (n, n) mask
(bf16 for bf16 tensors, as PyTorch would promote bf16 + fp16 to fp32)
broadcast over batch and heads (uniform in [-4, 0], -inf past the
diagonal), as PyTorch users write it: eager, and torch.compile'd (which
fuses the scale and the add into the softmax). Each is timed as peers.py
times: CUDA-graph replay (GPU time, the headline) and CUDA events around
calls from Python; each output is checked against a float64 computation
first.

Usage: peers_attention.py --json out.json --shapes RxC,... [--heads 32] [--dtype f32,f16,bf16]
"""
import argparse
import math
import sys

import torch

from peers import DTYPES, add_timing_args, eager_and_compile_line, graph_floor, timed_peer, write

SCALE = 1.0 / math.sqrt(128.0)


def make_mask(n, dtype):
    m = torch.empty(n, n, device="cuda").uniform_(-4.0, 0.0)
    m.masked_fill_(torch.ones(n, n, dtype=torch.bool, device="cuda").triu(1), -float("inf"))
    return m.to(torch.bfloat16 if dtype == torch.bfloat16 else torch.float16)


def masked_softmax(x, mask):
    return torch.softmax(x * SCALE + mask, dim=-1)


def verified(y, x, mask):
    ref = torch.softmax(x.double() * SCALE + mask.double(), dim=-1)
    # bf16: eager rounds x * s and the sum to 8 significant bits before the
    # softmax, about 1% of the output.
    rel = 4e-2 if x.dtype == torch.bfloat16 else 2e-3
    return bool(((y.double() - ref).abs() <= rel * ref.abs() + 1e-6).all())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--dtype", default="f32,f16")
    add_timing_args(ap)
    a = ap.parse_args()
    dtypes = DTYPES
    compiled = torch.compile(masked_softmax, dynamic=False)
    floor = graph_floor(a.iters, a.repeats, a.warmup_s)
    rows = []
    out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "iters": a.iters, "repeats": a.repeats,
           "graph_floor": floor, "scale": SCALE, "rows": rows}
    for dname in a.dtype.split(","):
        for shape in a.shapes.split(","):
            r, n = (int(v) for v in shape.split("x"))
            batch = r // (a.heads * n)
            x = (torch.randn(batch, a.heads, n, n, device="cuda") * 4).to(dtypes[dname])
            mask = make_mask(n, dtypes[dname])
            row = {"shape": shape, "dtype": dname, "heads": a.heads, "batch": batch}
            for name, fn in {"eager": masked_softmax, "compile": compiled}.items():
                call = lambda t, fn=fn: fn(t, mask)
                ok = verified(call(x), x, mask)
                row[name] = timed_peer(call, x, a, ok)
            rows.append(row)
            print(f"peers: {dname} ({batch},{a.heads},{n},{n}) + mask: " + eager_and_compile_line(row),
                  file=sys.stderr, flush=True)
            del x
            torch.cuda.empty_cache()
            write(a.json, out)


if __name__ == "__main__":
    main()
