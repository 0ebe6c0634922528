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

With --sinks the forward had one sink logit (0, as `vksoftmax bench
--backward --sinks` gives it) appended to every row, and each row's share
of the sink's gradient is computed beside dx, as `vksoftmax bench` does:
"eager" is what autograd runs for softmax(cat(x, sink))[..., :n], the
backward of the n + 1 columns it saved (dy padded with a zero column, the
last column of the result the sink's share); "compile" is the formula with
the share -p * sum(y * dy), p = 1 - sum(y) (log-softmax: -p * sum(dy),
p = 1 - sum(exp(y))), torch.compile'd, from y's n columns.

Usage: peers_backward.py --json out.json --shapes RxC,... [--dtype f32,f16,bf16] [--log] [--sinks]
"""
import argparse
import sys

import torch

from peers import DTYPES, add_timing_args, eager_and_compile_line, graph_floor, timed_peer, write


# vksoftmax's bound on a backward output per storage type, relative to the terms' size (tests/TOLERANCES.md).
BACKWARD_REL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def eager(y, dy, log):
    if log:
        return torch._log_softmax_backward_data(dy, y, -1, y.dtype)
    return torch._softmax_backward_data(dy, y, -1, y.dtype)


def formula(y, dy, log):
    if log:
        return (dy.float() - torch.exp(y.float()) * dy.float().sum(-1, keepdim=True)).to(y.dtype)
    yf = y.float()
    return (yf * (dy.float() - (yf * dy.float()).sum(-1, keepdim=True))).to(y.dtype)


def eager_sinks(y_saved, dy, log):
    """Autograd's backward of softmax over the logits with the sink as a last column: y_saved has n + 1
    columns; returns dx and each row's share of the sink's gradient."""
    dxc = eager(y_saved, torch.nn.functional.pad(dy, (0, 1)), log)
    return dxc[:, :-1], dxc[:, -1]


def formula_sinks(y, dy, log):
    yf, dyf = y.float(), dy.float()
    if log:
        total = dyf.sum(-1, keepdim=True)
        dx = dyf - torch.exp(yf) * total
        p = 1 - torch.exp(yf).sum(-1)
    else:
        total = (yf * dyf).sum(-1, keepdim=True)
        dx = yf * (dyf - total)
        p = 1 - yf.sum(-1)
    return dx.to(y.dtype), -p.clamp(min=0) * total.squeeze(-1)


def verified_sink_gradient(got, y, dy, log):
    """Each row's share within the bound of compare_sink_gradient() (tests/TOLERANCES.md): p's error is
    absolute, so a row is judged against |ref| + sum|y dy| (log-softmax: |ref| + sum|dy|)."""
    yd, dyd = y.double(), dy.double()
    if log:
        ref = -(1 - torch.exp(yd).sum(-1)).clamp(min=0) * dyd.sum(-1)
        magnitude = dyd.abs().sum(-1)
    else:
        ref = -(1 - yd.sum(-1)).clamp(min=0) * (yd * dyd).sum(-1)
        magnitude = (yd * dyd).abs().sum(-1)
    rel = BACKWARD_REL[y.dtype]
    return bool(((got.double() - ref).abs() <= rel * (ref.abs() + magnitude).clamp(min=1e-30)).all())


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
    rel = BACKWARD_REL[y.dtype]
    # Below the floor (fp16: 2^-14, its smallest normal) outputs are judged absolutely.
    floor = 6.103515625e-05 if y.dtype == torch.float16 else 1e-30
    return bool(((dx.double() - ref).abs() <= rel * scale.clamp(min=floor)).all())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--dtype", default="f32,f16")
    ap.add_argument("--log", action="store_true")
    ap.add_argument("--sinks", action="store_true", help="the forward had a sink: its gradient too")
    add_timing_args(ap)
    a = ap.parse_args()
    dtypes = DTYPES
    torch._dynamo.config.cache_size_limit = 256  # a compiled variant per shape and dtype
    compiled = torch.compile(formula_sinks if a.sinks else formula, dynamic=False)
    floor = graph_floor(a.iters, a.repeats, a.warmup_s)
    rows = []
    out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "iters": a.iters, "repeats": a.repeats,
           "graph_floor": floor, "backward": True, "log": a.log, "sinks": a.sinks, "rows": rows}
    for dname in a.dtype.split(","):
        for shape in a.shapes.split(","):
            r, c = (int(v) for v in shape.split("x"))
            x = torch.randn(r, c, device="cuda") * 4
            if a.sinks:
                x = torch.nn.functional.pad(x, (0, 1))  # the sink, 0, as the last column
            y_saved = (torch.log_softmax if a.log else torch.softmax)(x, -1).to(dtypes[dname])
            y = y_saved[:, :c].contiguous()
            dy = torch.randn(r, c, device="cuda").to(dtypes[dname])
            del x
            row = {"shape": shape, "dtype": dname, "log": a.log, "sinks": a.sinks}
            peers = {"eager": (eager_sinks, y_saved), "compile": (compiled, y)} if a.sinks else \
                {"eager": (eager, y), "compile": (compiled, y)}
            for name, (fn, arg) in peers.items():
                call = lambda t, fn=fn: fn(t, dy, a.log)
                got = call(arg)
                ok = verified(got[0], y, dy, a.log) and verified_sink_gradient(got[1], y, dy, a.log) \
                    if a.sinks else verified(got, y, dy, a.log)
                row[name] = timed_peer(call, arg, a, ok)
            rows.append(row)
            what = "backward" + (" (log)" if a.log else "") + (" with sinks" if a.sinks else "")
            print(f"peers: {dname} {shape} {what}: " + eager_and_compile_line(row), file=sys.stderr, flush=True)
            del y, y_saved, dy
            torch.cuda.empty_cache()
            write(a.json, out)


if __name__ == "__main__":
    main()
