#!/usr/bin/env python3
"""Peer timings of the softmax backward pass on CUDA, for comparison with
`vksoftmax bench --backward`.

For rows x cols shapes: y = softmax(x) (log-softmax with --log) of
normal(0, 4) logits and dy normal(0, 1), then dx as PyTorch's autograd
computes it, torch._softmax_backward_data (torch._log_softmax_backward_data)
("eager"), and the formula dx = y * (dy - sum(y * dy)) (log-softmax:
dy - exp(y) * sum(dy)) torch.compile'd ("compile"). Each is timed as
peers.py times: CUDA-graph replay (GPU time, the headline) and CUDA events
around calls from Python; each output is checked against a float64
computation first.

Usage: peers_backward.py --json out.json --shapes RxC,... [--dtype f32,f16,bf16] [--log]
"""
import argparse
import sys

import torch

from peers import DTYPES, add_timing_args, eager_and_compile_line, graph_floor, timed_peer, write


def eager(y, dy, log):
    if log:
        return torch._log_softmax_backward_data(dy, y, -1, y.dtype)
    return torch._softmax_backward_data(dy, y, -1, y.dtype)


def formula(y, dy, log):
    if log:
        return (dy.float() - torch.exp(y.float()) * dy.float().sum(-1, keepdim=True)).to(y.dtype)
    yf = y.float()
    return (yf * (dy.float() - (yf * dy.float()).sum(-1, keepdim=True))).to(y.dtype)


def verified(dx, y, dy, log):
    """Within vksoftmax's bound for the storage type, relative to the terms' size (compare_backward(),
    tests/TOLERANCES.md)."""
    yd, dyd = y.double(), dy.double()
    if log:
        ref = dyd - torch.exp(yd) * dyd.sum(-1, keepdim=True)
        scale = ref.abs() + dyd.abs() + torch.exp(yd) * dyd.abs().sum(-1, keepdim=True)
    else:
        ref = yd * (dyd - (yd * dyd).sum(-1, keepdim=True))
        scale = ref.abs() + yd.abs() * (dyd.abs() + (yd * dyd).abs().sum(-1, keepdim=True))
    rel = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[y.dtype]
    # Below the floor (fp16: 2^-14, its smallest normal) outputs are judged absolutely.
    floor = 6.103515625e-05 if y.dtype == torch.float16 else 1e-30
    return bool(((dx.double() - ref).abs() <= rel * scale.clamp(min=floor)).all())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--dtype", default="f32,f16")
    ap.add_argument("--log", action="store_true")
    add_timing_args(ap)
    a = ap.parse_args()
    dtypes = DTYPES
    torch._dynamo.config.cache_size_limit = 256  # a compiled variant per shape and dtype
    compiled = torch.compile(formula, dynamic=False)
    floor = graph_floor(a.iters, a.repeats, a.warmup_s)
    rows = []
    out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "iters": a.iters, "repeats": a.repeats,
           "graph_floor": floor, "log": a.log, "rows": rows}
    for dname in a.dtype.split(","):
        for shape in a.shapes.split(","):
            r, c = (int(v) for v in shape.split("x"))
            x = torch.randn(r, c, device="cuda") * 4
            y = (torch.log_softmax if a.log else torch.softmax)(x, -1).to(dtypes[dname])
            dy = torch.randn(r, c, device="cuda").to(dtypes[dname])
            del x
            row = {"shape": shape, "dtype": dname, "log": a.log}
            for name, fn in {"eager": eager, "compile": compiled}.items():
                call = lambda t, fn=fn: fn(t, dy, a.log)
                ok = verified(call(y), y, dy, a.log)
                row[name] = timed_peer(call, y, a, ok)
            rows.append(row)
            print(f"peers: {dname} {shape} backward{' (log)' if a.log else ''}: " + eager_and_compile_line(row),
                  file=sys.stderr, flush=True)
            del y, dy
            torch.cuda.empty_cache()
            write(a.json, out)


if __name__ == "__main__":
    main()
