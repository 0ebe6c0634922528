#!/usr/bin/env python3
"""One table from `vksoftmax bench --json` and `peers.py --json`: vksoftmax
against the best peer on each shape, as Markdown.

Usage: compare.py VK.json PEERS.json [--out RESULTS.md]
"""
import argparse
import json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vk")
    ap.add_argument("peers")
    ap.add_argument("--out")
    a = ap.parse_args()
    vk, peers = json.load(open(a.vk)), json.load(open(a.peers))
    by = {(r["dtype"], r["shape"]): r for r in peers["rows"]}
    ceiling = vk["copy_ceiling"]["gbps"]
    lines = [
        f"Device: {vk['device']['name']}, driver {vk['device']['driver']}, Vulkan {vk['device']['api_version']}; "
        f"date {vk['date']}; PyTorch {peers['torch']}, Triton {peers['triton']}.",
        f"Timing: {vk['iters']} back-to-back calls between GPU timestamps (peers: CUDA events), median of "
        f"{vk['repeats']}. Copy ceiling (vksoftmax copy shader, {vk['copy_ceiling']['bytes']} bytes): "
        f"{ceiling:.0f} GB/s. GB/s counts 2 x N x sizeof(dtype).",
        "",
        "| dtype | shape | path | vksoftmax us | min us | of which pass 1 | GB/s | % ceiling | eager us | compile us | triton us | best peer | best peer / vksoftmax | same, on minima |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    wins = total = 0
    for r in vk["rows"]:
        p = by.get((r["dtype"], r["shape"]), {})
        cells = {k: p[k]["median_us"] for k in ("eager", "compile", "triton") if k in p}
        best = min(cells.items(), key=lambda kv: kv[1]) if cells else None
        ratio = best[1] / r["median_us"] if best else float("nan")
        mins = {k: p[k]["min_us"] for k in ("eager", "compile", "triton") if k in p and "min_us" in p[k]}
        ratio_min = min(mins.values()) / r["min_us"] if mins else float("nan")
        total += 1
        wins += ratio > 1
        fmt = lambda k: f"{cells[k]:.1f}" if k in cells else "–"
        mark = "" if r["verified"] else " (WRONG)"
        lines.append(
            f"| {r['dtype']} | {r['shape']} | {r['path']} | {r['median_us']:.1f}{mark} | {r['min_us']:.1f} | "
            f"{'%.1f' % r['pass1_us'] if r.get('pass1_us') else ''} | {r['gbps']:.0f} | "
            f"{100 * r['ceiling_fraction']:.0f}% | {fmt('eager')} | {fmt('compile')} | {fmt('triton')} | "
            f"{best[0] if best else '–'} | {'**' if ratio > 1 else ''}{ratio:.2f}{'**' if ratio > 1 else ''} | "
            f"{ratio_min:.2f} |")
    lines += ["", f"vksoftmax faster than the best peer on {wins} of {total} rows."]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        open(a.out, "w").write(text)


if __name__ == "__main__":
    main()
