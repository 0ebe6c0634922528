#!/usr/bin/env python3
"""Peer softmax timings on CUDA, timed as vksoftmax bench times itself.

PyTorch eager torch.softmax, torch.compile of the same, and a Triton kernel
that keeps a whole row in registers (one program per row, rows <= 65536).
Timing: CUDA events around ITERS back-to-back calls, divided by ITERS,
median of REPEATS, after warm-up; inputs normal(0, 4), never zeros. Each
peer's output is checked against a float64 softmax before it is timed.

Usage: peers.py --json out.json [--shapes suite|RxC,...] [--dtype f32,f16] [--log]
"""
import argparse
import json
import math
import sys
import time

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # Triton is optional: its column is then empty
    triton = None

SUITE = [(1, 16777216), (1, 1048576), (8, 1048576), (32, 131072), (1024, 32768), (4096, 1024), (1024, 512),
         (65536, 128), (20480, 4096), (1280, 12888), (10240, 1024), (5120, 256), (20480, 77), (16, 131072),
         (16, 524288)]

if triton is not None:
    @triton.jit
    def _row_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr, LOG: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        keep = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=keep, other=-float("inf")).to(tl.float32)
        z = x - tl.max(x, axis=0)
        e = tl.exp(z)
        d = tl.sum(e, axis=0)
        y = z - tl.log(d) if LOG else e / d
        tl.store(y_ptr + row * n_cols + cols, y.to(y_ptr.dtype.element_ty), mask=keep)

    def triton_row(x, log):
        rows, cols = x.shape
        block = triton.next_power_of_2(cols)
        warps = 4 if block <= 2048 else 8 if block <= 8192 else 16 if block <= 32768 else 32
        y = torch.empty_like(x)
        _row_kernel[(rows,)](x, y, cols, BLOCK=block, LOG=log, num_warps=warps)
        return y


def time_calls(fn, x, iters, repeats):
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn(x)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / iters)
    times.sort()
    return times[len(times) // 2], times[0]


def close_enough(y, x, log):
    ref = (torch.log_softmax if log else torch.softmax)(x.double(), dim=-1)
    y = y.double()
    if log:
        return bool(((y - ref).abs() <= 2e-3 * ref.abs().clamp(min=1)).all())
    return bool(((y - ref).abs() <= 2e-3 * ref.abs() + 1e-6).all())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--shapes", default="suite")
    ap.add_argument("--dtype", default="f32,f16")
    ap.add_argument("--log", action="store_true")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--compile-budget-s", type=float, default=240, help="skip torch.compile once this much is spent")
    a = ap.parse_args()
    shapes = SUITE if a.shapes == "suite" else [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")]
    dtypes = {"f32": torch.float32, "f16": torch.float16}
    torch._dynamo.config.cache_size_limit = 256
    op = torch.log_softmax if a.log else torch.softmax
    eager = lambda x: op(x, dim=-1)
    compiled = torch.compile(lambda x: op(x, dim=-1), dynamic=False)
    compile_spent = 0.0
    rows = []
    for dname in a.dtype.split(","):
        for r, c in shapes:
            x = (torch.randn(r, c, device="cuda") * 4).to(dtypes[dname])
            peers = {"eager": eager}
            if compile_spent < a.compile_budget_s:
                peers["compile"] = compiled
            if triton is not None and c <= 65536:
                peers["triton"] = lambda t: triton_row(t, a.log)
            row = {"shape": f"{r}x{c}", "dtype": dname, "log": a.log}
            for name, fn in peers.items():
                t0 = time.time()
                ok = close_enough(fn(x), x, a.log)
                if name == "compile":
                    compile_spent += time.time() - t0
                med, mn = time_calls(fn, x, a.iters, a.repeats)
                row[name] = {"median_us": med, "min_us": mn, "verified": ok}
            rows.append(row)
            best = min((v["median_us"], k) for k, v in row.items() if isinstance(v, dict))
            print(f"peers: {dname} {r}x{c}: " + ", ".join(f"{k} {v['median_us']:.1f} us" for k, v in row.items()
                                                       if isinstance(v, dict)) + f" (best {best[1]})",
                  file=sys.stderr, flush=True)
    inf = float("inf")
    semantics = {
        "softmax([inf,1,2])": torch.softmax(torch.tensor([inf, 1.0, 2.0]), 0).tolist(),
        "log_softmax([inf,1,2])": torch.log_softmax(torch.tensor([inf, 1.0, 2.0]), 0).tolist(),
        "log_softmax([-inf,0])": torch.log_softmax(torch.tensor([-inf, 0.0]), 0).tolist(),
        "softmax([-inf,-inf])": torch.softmax(torch.tensor([-inf, -inf]), 0).tolist(),
    }
    out = {"torch": torch.__version__, "triton": getattr(triton, "__version__", None),
           "gpu": torch.cuda.get_device_name(), "iters": a.iters, "repeats": a.repeats, "rows": rows,
           "semantics": {k: [repr(v) for v in vals] for k, vals in semantics.items()}}
    with open(a.json, "w") as f:
        json.dump(out, f, indent=2)
    print("torch semantics:", out["semantics"], file=sys.stderr)


if __name__ == "__main__":
    main()
