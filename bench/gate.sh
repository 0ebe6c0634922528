#!/usr/bin/env bash
# On the device machine, in one call: the correctness gate
# (scripts/device-check.sh: GPU tests over every geometry, CLI, embedding,
# the full conformance catalogue), then the benchmark beside the peers
# (bench/compare.sh). A faster shader counts only if the gate passes in the
# same call: NVIDIA's compiler has turned equivalent shaders into NaN rows
# (bench/NOTES.md). The gate's logs stay out of $OUT (it returns few
# files); its conformance report is copied there. Exit status: the gate's.
# Usage: bench/gate.sh [--log]
set -uo pipefail
logs=$(mktemp -d)
OUT=$logs bash scripts/device-check.sh | tail -40
gate=${PIPESTATUS[0]}
cp "$logs/conformance.json" "${OUT:-/tmp/vksoftmax-bench}/" 2>/dev/null || true
bash bench/compare.sh "$@"
exit "$gate"
