#!/usr/bin/env bash
# On the device machine: vksoftmax bench and the peers in one run, then the
# tables (build first; PyTorch and Triton for the peers). The peers time the
# shapes vksoftmax ran; so does ggml's Vulkan softmax (in fp32), where
# build/bin/peers_ggml was built (not for --log). Results land in $OUT.
# Usage: bench/compare.sh [--shapes LIST] [--log]   (default: the whole suite)
set -uo pipefail
out=${OUT:-/tmp/vksoftmax-bench}
mkdir -p "$out"
shapes=suite log=()
while [ $# -gt 0 ]; do
  case $1 in
    --shapes) shapes=$2; shift 2 ;;
    --log) log=(--log); shift ;;
    *) echo "compare.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
build/bin/vksoftmax bench --shapes "$shapes" --dtype f32,f16 "${log[@]}" --json "$out/vk.json" --csv "$out/vk.csv" \
  | tee "$out/vk.txt"
PYTHONUNBUFFERED=1 python3 bench/peers.py --json "$out/peers.json" --shapes-from "$out/vk.json" "${log[@]}" 2>&1 \
  | tee "$out/peers.txt" | grep -v "^peers:" | tail -3
ggml=()
if [ -x build/bin/peers_ggml ] && [ ${#log[@]} -eq 0 ]; then
  build/bin/peers_ggml --shapes-from "$out/vk.json" --json "$out/ggml.json" 2>&1 | tee "$out/ggml.txt" | tail -3
  ggml=(--ggml "$out/ggml.json")
fi
python3 bench/compare.py "$out/vk.json" "$out/peers.json" "${ggml[@]}" --out "$out/RESULTS.md"
