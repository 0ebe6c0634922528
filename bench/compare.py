#!/usr/bin/env python3
"""Tables from `vksoftmax bench --json` and `peers.py --json` (or, for
`vksoftmax bench --backward`, `peers_backward.py --json`), as Markdown:
vksoftmax against the best peer on each shape, both measured as GPU time
(the peers' CUDA-graph figure), each above its own floor, and every peer's
two timings. With --ggml, `peers_ggml --json` beside vksoftmax's fp32 rows:
ggml's Vulkan softmax on the same device (or its backward pass).

The targets checked on each shape:
  floor:  vksoftmax's time above the Vulkan floor <= the best peer's time
          above the CUDA graph floor;
  faster: where the best peer takes >= 10 us, vksoftmax is faster outright.

Usage: compare.py VK.json [PEERS.json] [--ggml GGML.json] [--out RESULTS.md]
"""
import argparse
import json

PEERS = ("eager", "compile", "triton_row", "triton_persistent")
OUTRIGHT_US = 10.0


def best_peer(p):
    timed = {k: p[k] for k in PEERS if k in p and p[k].get("verified")}
    if not timed:
        return None, None
    name = min(timed, key=lambda k: timed[k]["graph_us"])
    return name, timed[name]


def verdict(r, best, vk_floor, cuda_floor):
    """(over-floor target met, outright target met or None where it does not apply)."""
    over_floor = r["median_us"] - vk_floor <= best["graph_us"] - cuda_floor
    outright = r["median_us"] < best["graph_us"] if best["graph_us"] >= OUTRIGHT_US else None
    return over_floor, outright


def summary_table(vk, by, cuda_floor):
    vk_floor = vk["floor_us"]
    lines = [
        "| dtype | shape | path | vksoftmax us | over floor | GB/s | % of copy at size | best peer | graph us | over floor | events us | peer / vksoftmax | targets |",
        "|---|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|",
    ]
    met = total = 0
    for r in vk["rows"]:
        name, best = best_peer(by.get((r["dtype"], r["shape"]), {}))
        mark = "" if r["verified"] else " (WRONG)"
        if best is None:
            lines.append(f"| {r['dtype']} | {r['shape']} | {r['path']} | {r['median_us']:.2f}{mark} | "
                         f"{r['median_us'] - vk_floor:.2f} | {r['gbps']:.0f} | {100 * r['ceiling_fraction']:.0f}% | – | | | | | |")
            continue
        over_floor, outright = verdict(r, best, vk_floor, cuda_floor)
        ok = over_floor and outright is not False and r["verified"]
        total += 1
        met += ok
        ratio = best["graph_us"] / r["median_us"]
        targets = ("floor ✓" if over_floor else "floor ✗") + (
            "" if outright is None else (", faster ✓" if outright else ", faster ✗"))
        lines.append(
            f"| {r['dtype']} | {r['shape']} | {r['path']} | {r['median_us']:.2f}{mark} | {r['median_us'] - vk_floor:.2f} | "
            f"{r['gbps']:.0f} | {100 * r['ceiling_fraction']:.0f}% | {name} | {best['graph_us']:.2f} | "
            f"{best['graph_us'] - cuda_floor:.2f} | {best['events_us']:.2f} | "
            f"{'**' if ratio > 1 else ''}{ratio:.2f}{'**' if ratio > 1 else ''} | {targets} |")
    return lines, met, total


def peers_table(vk, by):
    timed = [k for k in PEERS if any(k in p for p in by.values())]
    head = "| dtype | shape | " + " | ".join(f"{k} graph / events" for k in timed) + " |"
    lines = [head, "|---|---|" + "---:|" * len(timed)]
    for r in vk["rows"]:
        p = by.get((r["dtype"], r["shape"]), {})
        cells = []
        for k in timed:
            if k not in p:
                cells.append("–")
                continue
            wrong = "" if p[k]["verified"] else " (WRONG)"
            cells.append(f"{p[k]['graph_us']:.2f} / {p[k]['events_us']:.2f}{wrong}")
        lines.append(f"| {r['dtype']} | {r['shape']} | " + " | ".join(cells) + " |")
    return lines


def ggml_table(vk, ggml):
    """vksoftmax's fp32 rows beside peers_ggml's cases of the same shape and pass."""
    backward = bool(vk.get("backward"))
    cases = {c["case"]: c for c in ggml["cases"] if not c["attention"] and c.get("backward", False) == backward}
    lines = [
        f"ggml {ggml['ggml']}'s Vulkan {'soft_max_ext_back' if backward else 'soft_max_ext'} on {ggml['device']}, "
        "fp32: the wall time a call adds to a chain of calls, each reading the one before (peers_ggml).",
        "",
        "| shape | vksoftmax us | path | ggml us | ggml / vksoftmax |",
        "|---|---:|---|---:|---:|",
    ]
    faster = total = 0
    for r in vk["rows"]:
        c = cases.get(r["shape"]) if r["dtype"] == "f32" else None
        if c is None:
            continue
        mark = "" if r["verified"] else " (WRONG)"
        if c["wall_us"] is None or not c["ok"]:
            lines.append(f"| {r['shape']} | {r['median_us']:.2f}{mark} | {r['path']} | "
                         f"{'unmeasured' if c['wall_us'] is None else 'WRONG'} | |")
            continue
        ratio = c["wall_us"] / r["median_us"]
        total += 1
        faster += ratio > 1 and r["verified"]
        bold = "**" if ratio > 1 else ""
        lines.append(f"| {r['shape']} | {r['median_us']:.2f}{mark} | {r['path']} | {c['wall_us']:.2f} | "
                     f"{bold}{ratio:.2f}{bold} |")
    return lines + ["", f"vksoftmax faster on {faster} of {total} rows."]


def cuda_tables(vk, peers, vk_name, peers_name):
    backward = bool(vk.get("backward"))
    # peers_backward.py's files carry "backward" (older ones only "sinks").
    peers_backward = bool(peers.get("backward", "sinks" in peers))
    if backward != peers_backward:
        raise SystemExit(f"compare.py: {vk_name} times the {'backward' if backward else 'forward'} pass and "
                         f"{peers_name} the {'backward' if peers_backward else 'forward'}: time both the same way")
    by = {(r["dtype"], r["shape"]): r for r in peers["rows"]}
    versions = f"PyTorch {peers['torch']}" + (f", Triton {peers['triton']}" if peers.get("triton") else "")
    cuda_floor = peers["graph_floor"]["median_us"]
    summary, met, total = summary_table(vk, by, cuda_floor)
    return [
        f"Device: {vk['device']['name']}, driver {vk['device']['driver']}, Vulkan {vk['device']['api_version']}; "
        f"date {vk['date']}; {versions}" + ("; the backward pass (y, dy in, dx out)." if backward else "."),
        "",
        f"Timing: {vk['iters']} back-to-back calls, median of {vk['repeats']}, after a warm-up burst. vksoftmax: "
        "GPU timestamps around a recorded command buffer. Peers, graph: the same number of calls captured once in "
        "a CUDA graph and replayed (GPU time, the headline); events: CUDA events around calls issued from Python "
        "(includes PyTorch's launch cost).",
        f"Floors, per call: Vulkan one-workgroup dispatch + the same barrier {vk['floor_us']:.2f} us; CUDA graph "
        f"kernel node {cuda_floor:.2f} us. '% of copy at size': GB/s against a copy of the same bytes timed the same "
        f"way (device ceiling over {vk['copy_ceiling']['bytes']} bytes: {vk['copy_ceiling']['gbps']:.0f} GB/s). "
        f"GB/s counts {3 if backward else 2} x N x sizeof(dtype).",
        f"Targets: 'floor' = vksoftmax's time above its floor <= the best peer's above its own; 'faster' (where the "
        f"best peer takes >= {OUTRIGHT_US:.0f} us) = faster outright.",
        "",
    ] + summary + ["", f"Targets met on {met} of {total} rows.", "", "Every peer, us per call:", ""] + peers_table(vk, by)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vk")
    ap.add_argument("peers", nargs="?")
    ap.add_argument("--ggml", help="peers_ggml --json output of the same device")
    ap.add_argument("--out")
    a = ap.parse_args()
    if not a.peers and not a.ggml:
        raise SystemExit("compare.py: give PEERS.json, --ggml GGML.json or both")
    vk = json.load(open(a.vk))
    lines = cuda_tables(vk, json.load(open(a.peers)), a.vk, a.peers) if a.peers else []
    if a.ggml:
        lines += ([""] if lines else []) + ggml_table(vk, json.load(open(a.ggml)))
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        open(a.out, "w").write(text)


if __name__ == "__main__":
    main()
