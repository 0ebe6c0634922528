#!/usr/bin/env bash
# The suite with and without the warm-up burst, GPU clocks sampled meanwhile.
set -uo pipefail
out=${OUT:-/tmp}
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,clocks_throttle_reasons.active --format=csv -lms 100 > "$out/clocks.csv" 2>&1 &
smi=$!
echo "== suite, no warm-up burst"; build/bin/vksoftmax bench --shapes suite --dtype f32 --repeats 9 --warmup-ms 0 2>/dev/null | tail -15
echo "== suite, 200 ms warm-up burst"; build/bin/vksoftmax bench --shapes suite --repeats 9 --json "$out/suite.json" 2>/dev/null | tail -30
kill $smi
awk -F', ' 'NR>1 {print $2, $3, $6}' "$out/clocks.csv" | sort | uniq -c | sort -rn | head -12
