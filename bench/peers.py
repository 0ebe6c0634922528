#!/usr/bin/env python3
"""Peer softmax timings on CUDA, for comparison with `vksoftmax bench`.

Peers: PyTorch eager torch.softmax, torch.compile of the same, a Triton
kernel that keeps a whole row in registers (one program per row), and a
persistent Triton kernel (a fixed grid of programs, each walking many rows
with a pipelined loop, in the spirit of Triton's fused-softmax tutorial).
Both Triton kernels hold a row in registers: rows up to 65536.

Each peer is timed two ways, each after a warm-up burst that brings the
clocks up (an idle GPU drops them):
  graph:  ITERS calls captured once in a torch.cuda.CUDAGraph and replayed,
          CUDA events around the replay: GPU time, the way vksoftmax bench
          times a recorded command buffer. The headline figure.
  events: CUDA events around ITERS calls issued from Python. Includes
          PyTorch's CPU launch cost: under ~30 us a call, that is what it
          measures. Kept beside the graph figure.
Per call = total / ITERS, median (and min) of REPEATS. Inputs normal(0, 4),
never zeros. Each peer's output is checked against a float64 softmax before
it is timed. The graph floor (a one-element add per node) is measured the
same way, and reported per call.

Usage: peers.py --json out.json (--shapes RxC,... | --shapes-from vk.json) [--dtype f32,f16,bf16] [--log]
"""
import argparse
import json
import os
import sys
import time

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # Triton is optional: its columns are then empty
    triton = None

TRITON_MAX_COLS = 65536

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

    @triton.jit
    def _persistent_kernel(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr, LOG: tl.constexpr,
                           STAGES: tl.constexpr):
        first = tl.program_id(0)
        step = tl.num_programs(0)
        cols = tl.arange(0, BLOCK)
        keep = cols < n_cols
        for row in tl.range(first, n_rows, step, num_stages=STAGES):
            base = row.to(tl.int64) * n_cols
            x = tl.load(x_ptr + base + cols, mask=keep, other=-float("inf")).to(tl.float32)
            z = x - tl.max(x, axis=0)
            e = tl.exp(z)
            d = tl.sum(e, axis=0)
            y = z - tl.log(d) if LOG else e / d
            tl.store(y_ptr + base + cols, y.to(y_ptr.dtype.element_ty), mask=keep)

    def _warps(block):
        return 4 if block <= 2048 else 8 if block <= 8192 else 16 if block <= 32768 else 32

    def triton_row(x, log):
        rows, cols = x.shape
        block = triton.next_power_of_2(cols)
        y = torch.empty_like(x)
        _row_kernel[(rows,)](x, y, cols, BLOCK=block, LOG=log, num_warps=_warps(block))
        return y

    def triton_persistent(x, log, sms):
        rows, cols = x.shape
        block = triton.next_power_of_2(cols)
        warps = _warps(block)
        # As many programs as fit the SMs at once (2048 threads per SM, at
        # most 8 programs), none idle: each walks rows first, first + grid, ...
        per_sm = max(1, min(8, 2048 // (32 * warps)))
        grid = min(rows, sms * per_sm)
        stages = 2 if block <= 8192 else 1
        y = torch.empty_like(x)
        _persistent_kernel[(grid,)](x, y, rows, cols, BLOCK=block, LOG=log, STAGES=stages, num_warps=warps)
        return y


def warm_up(burst, seconds):
    """Runs `burst` until `seconds` have passed on the GPU clock's side."""
    end = time.time() + seconds
    while time.time() < end:
        burst()
        torch.cuda.synchronize()


# As `vksoftmax bench` (bench::settle(), bench/bench.hpp): a timing counts
# once the next one, taken right after it, agrees within 3% of the smaller
# median, and, for GPU time (a graph's), both are steady (median within
# 10% of the fastest repeat); at most four are taken, and the last is
# reported. After seconds of CPU work (a torch.compile, a check) the GPU
# can run a whole first timing slow, and change state inside the next
# (bench/NOTES.md, v50, v98). Event timings of calls issued from Python
# measure the launches too, whose repeats spread with the CPU (torch.compile
# backward 132x32768: 9.8%), so they need agreement alone.
SETTLED_FRACTION = 0.03
STEADY_FRACTION = 0.10
MAX_TIMINGS = 4
FOLLOW_WARMUP_S = 0.1


def steady(med, mn):
    return med <= (1.0 + STEADY_FRACTION) * mn


def settle(time_once, warmup_s, need_steady=True):
    """time_once(warm-up seconds) -> (median, min), repeated until two
    timings in a row agree (and, with need_steady, are steady): the last (median, min), the medians set aside, and
    whether the last two agreed (False: four taken, none settling)."""
    med, mn = time_once(warmup_s)
    unsettled = []
    agree = False
    for _ in range(MAX_TIMINGS - 1):
        med2, mn2 = time_once(min(warmup_s, FOLLOW_WARMUP_S))
        agree = (abs(med2 - med) <= SETTLED_FRACTION * min(med, med2)
                 and (not need_steady or (steady(med, mn) and steady(med2, mn2))))
        if not agree:
            unsettled.append(med)
        med, mn = med2, mn2
        if agree:
            break
    return med, mn, unsettled, agree


def median_and_min(times):
    times = sorted(times)
    return times[len(times) // 2], times[0]


def time_events(fn, x, iters, repeats, warmup_s):
    def once(warm_s):
        warm_up(lambda: [fn(x) for _ in range(iters)], warm_s)
        times = []
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                fn(x)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3 / iters)
        return median_and_min(times)
    return settle(once, warmup_s, need_steady=False)


def capture(fn, x, iters):
    """ITERS calls of fn captured once (after warm-up calls on a side stream, as capture needs)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(iters):
            fn(x)
    return graph


def time_graph(fn, x, iters, repeats, warmup_s):
    graph = capture(fn, x, iters)

    def once(warm_s):
        warm_up(graph.replay, warm_s)
        times = []
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3 / iters)
        return median_and_min(times)
    result = settle(once, warmup_s)
    del graph
    return result


def close_enough(y, x, log):
    ref = (torch.log_softmax if log else torch.softmax)(x.double(), dim=-1)
    y = y.double()
    rel = 1.6e-2 if x.dtype == torch.bfloat16 else 2e-3  # tests/TOLERANCES.md's bounds
    if log:
        return bool(((y - ref).abs() <= rel * ref.abs().clamp(min=1)).all())
    return bool(((y - ref).abs() <= rel * ref.abs() + 1e-6).all())


DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def add_timing_args(ap):
    """The options every peer script times with."""
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--warmup-s", type=float, default=0.2)


def timed_peer(call, x, a, ok):
    """One peer's row entry: graph-timed (the headline) and event-timed, with its check."""
    g_med, g_min, g_unsettled, g_settled = time_graph(call, x, a.iters, a.repeats, a.warmup_s)
    e_med, e_min, e_unsettled, e_settled = time_events(call, x, a.iters, a.repeats, a.warmup_s)
    return {"graph_us": g_med, "graph_min_us": g_min, "events_us": e_med, "events_min_us": e_min, "verified": ok,
            "graph_unsettled_us": g_unsettled, "graph_settled": g_settled,
            "events_unsettled_us": e_unsettled, "events_settled": e_settled}


def eager_and_compile_line(row):
    """The eager and compile timings of a row, as the scripts print them."""
    return (f"eager {row['eager']['graph_us']:.2f}/{row['eager']['events_us']:.1f}, compile "
            f"{row['compile']['graph_us']:.2f}/{row['compile']['events_us']:.1f} us graph/events, verified "
            f"{row['eager']['verified']}/{row['compile']['verified']}")


def graph_floor(iters, repeats, warmup_s):
    """Per call: a CUDA graph of one-element adds, the cheapest kernel node."""
    t = torch.zeros(1, device="cuda")
    med, mn, _, _ = time_graph(lambda v: v.add_(1), t, iters, repeats, warmup_s)
    return {"median_us": med, "min_us": mn}


def write(path, out):
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, indent=2)
    os.replace(path + ".tmp", path)


def parse_shapes(a):
    if a.shapes_from:
        seen = []
        for r in json.load(open(a.shapes_from))["rows"]:
            shape = (r["rows"], r["cols"])
            if shape not in seen:
                seen.append(shape)
        return seen
    if not a.shapes:
        sys.exit("peers.py: give --shapes RxC,... or --shapes-from vk.json")
    return [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")]


def peers_for(cols, log, compiled, with_compile, sms):
    op = torch.log_softmax if log else torch.softmax
    peers = {"eager": lambda t: op(t, dim=-1)}
    if with_compile:
        peers["compile"] = compiled
    if triton is not None and cols <= TRITON_MAX_COLS:
        peers["triton_row"] = lambda t: triton_row(t, log)
        peers["triton_persistent"] = lambda t: triton_persistent(t, log, sms)
    return peers


def measure_shape(x, peers, a, budget):
    row = {}
    for name, fn in peers.items():
        t0 = time.time()
        ok = close_enough(fn(x), x, a.log)
        if name == "compile":
            budget["compile_s"] += time.time() - t0
        row[name] = timed_peer(fn, x, a, ok)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--shapes")
    ap.add_argument("--shapes-from", help="the shapes of a `vksoftmax bench --json` file")
    ap.add_argument("--dtype", default="f32,f16")
    ap.add_argument("--log", action="store_true")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--warmup-s", type=float, default=0.2, help="warm-up burst before each timing")
    ap.add_argument("--compile-budget-s", type=float, default=240, help="skip torch.compile once this much is spent")
    a = ap.parse_args()
    shapes = parse_shapes(a)
    dtypes = DTYPES
    torch._dynamo.config.cache_size_limit = 256
    op = torch.log_softmax if a.log else torch.softmax
    compiled = torch.compile(lambda t: op(t, dim=-1), dynamic=False)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    floor = graph_floor(a.iters, a.repeats, a.warmup_s)
    print(f"peers: CUDA graph floor {floor['median_us']:.2f} us per node", file=sys.stderr, flush=True)
    budget = {"compile_s": 0.0}
    rows = []
    out = {"torch": torch.__version__, "triton": getattr(triton, "__version__", None),
           "gpu": torch.cuda.get_device_name(), "iters": a.iters, "repeats": a.repeats, "warmup_s": a.warmup_s,
           "graph_floor": floor, "compile_s": 0.0, "rows": rows}
    for dname in a.dtype.split(","):
        for r, c in shapes:
            x = (torch.randn(r, c, device="cuda") * 4).to(dtypes[dname])
            peers = peers_for(c, a.log, compiled, budget["compile_s"] < a.compile_budget_s, sms)
            row = {"shape": f"{r}x{c}", "dtype": dname, "log": a.log}
            row.update(measure_shape(x, peers, a, budget))
            rows.append(row)
            timed = {k: v for k, v in row.items() if isinstance(v, dict)}
            best = min(timed, key=lambda k: timed[k]["graph_us"])
            print(f"peers: {dname} {r}x{c}: " + ", ".join(
                f"{k} {v['graph_us']:.2f}/{v['events_us']:.1f}" for k, v in timed.items()) + f" us graph/events (best {best})",
                file=sys.stderr, flush=True)
            del x
            torch.cuda.empty_cache()
            out["compile_s"] = budget["compile_s"]
            write(a.json, out)  # after every shape: a run cut short keeps what it measured
    inf = float("inf")
    semantics = {
        "softmax([inf,1,2])": torch.softmax(torch.tensor([inf, 1.0, 2.0]), 0).tolist(),
        "log_softmax([inf,1,2])": torch.log_softmax(torch.tensor([inf, 1.0, 2.0]), 0).tolist(),
        "log_softmax([-inf,0])": torch.log_softmax(torch.tensor([-inf, 0.0]), 0).tolist(),
        "softmax([-inf,-inf])": torch.softmax(torch.tensor([-inf, -inf]), 0).tolist(),
    }
    out["semantics"] = {k: [repr(v) for v in vals] for k, vals in semantics.items()}
    write(a.json, out)
    print("torch semantics:", out["semantics"], file=sys.stderr)


if __name__ == "__main__":
    main()
