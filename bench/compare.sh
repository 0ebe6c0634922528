#!/usr/bin/env bash
# On the device machine: vksoftmax bench and the peers in one run, then one
# table (build first; PyTorch and Triton for the peers). Results land in $OUT.
# Usage: bench/compare.sh [--log]
set -uo pipefail
out=${OUT:-/tmp/vksoftmax-bench}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
build/bin/vksoftmax bench --shapes suite --dtype f32,f16 "$@" --json "$out/vk.json" --csv "$out/vk.csv" | tee "$out/vk.txt"
PYTHONUNBUFFERED=1 python3 bench/peers.py --json "$out/peers.json" "$@" 2>&1 | tee "$out/peers.txt" | grep -v "^peers:" | tail -3
python3 bench/compare.py "$out/vk.json" "$out/peers.json" --out "$out/RESULTS.md"
