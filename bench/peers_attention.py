#!/usr/bin/env python3
"""Peer timings of masked, scaled attention softmax on CUDA, for comparison
with `vksoftmax bench --attention mask|causal`.

The tensor is (batch, heads, n, n) seen as rows x n (rows = batch x heads x
n), softmax(x * s + mask, -1) with s = 1/sqrt(128) and an fp16 (n, n) mask
broadcast over batch and heads (uniform in [-4, 0], -inf past the
diagonal), as PyTorch users write it: eager, and torch.compile'd (which
fuses the scale and the add into the softmax). Each is timed as peers.py
times: CUDA-graph replay (GPU time, the headline) and CUDA events around
calls from Python; each output is checked against a float64 computation
first.

Usage: peers_attention.py --json out.json --shapes RxC,... [--heads 32] [--dtype f32,f16]
"""
import argparse
import math
import sys

import torch

from peers import graph_floor, time_events, time_graph, write

SCALE = 1.0 / math.sqrt(128.0)


def make_mask(n):
    m = torch.empty(n, n, device="cuda").uniform_(-4.0, 0.0)
    m.masked_fill_(torch.ones(n, n, dtype=torch.bool, device="cuda").triu(1), -float("inf"))
    return m.half()


def masked_softmax(x, mask):
    return torch.softmax(x * SCALE + mask, dim=-1)


def verified(y, x, mask):
    ref = torch.softmax(x.double() * SCALE + mask.double(), dim=-1)
    return bool(((y.double() - ref).abs() <= 2e-3 * ref.abs() + 1e-6).all())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--dtype", default="f32,f16")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--warmup-s", type=float, default=0.2)
    a = ap.parse_args()
    dtypes = {"f32": torch.float32, "f16": torch.float16}
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
            mask = make_mask(n)
            row = {"shape": shape, "dtype": dname, "heads": a.heads, "batch": batch}
            for name, fn in {"eager": masked_softmax, "compile": compiled}.items():
                call = lambda t, fn=fn: fn(t, mask)
                ok = verified(call(x), x, mask)
                g_med, g_min = time_graph(call, x, a.iters, a.repeats, a.warmup_s)
                e_med, e_min = time_events(call, x, a.iters, a.repeats, a.warmup_s)
                row[name] = {"graph_us": g_med, "graph_min_us": g_min, "events_us": e_med, "events_min_us": e_min,
                             "verified": ok}
            rows.append(row)
            print(f"peers: {dname} ({batch},{a.heads},{n},{n}) + mask: eager {row['eager']['graph_us']:.2f}/"
                  f"{row['eager']['events_us']:.1f}, compile {row['compile']['graph_us']:.2f}/{row['compile']['events_us']:.1f}"
                  f" us graph/events, verified {row['eager']['verified']}/{row['compile']['verified']}",
                  file=sys.stderr, flush=True)
            del x
            torch.cuda.empty_cache()
            write(a.json, out)


if __name__ == "__main__":
    main()
