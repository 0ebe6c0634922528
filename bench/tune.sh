#!/usr/bin/env bash
# On the device machine: the suite with the driver's pipeline statistics,
# then workgroup-size / vec4-slot sweeps on chosen shapes. Results in $OUT.
# Usage: bench/tune.sh "SHAPES" "WG:VPT ..."
set -uo pipefail
out=${OUT:-/tmp/vksoftmax-tune}
mkdir -p "$out"
shapes=${1:-20480x4096,65536x128,4096x1024,1024x32768}
grid=${2:-"64:4 128:2 128:4 128:8 256:1 256:2 256:4 512:1 512:2 1024:1"}
build/bin/vksoftmax bench --shapes suite --stats --repeats 9 --json "$out/suite.json" > "$out/suite.txt" 2>/dev/null
grep -vE "^    pass" "$out/suite.txt"
grep -E "^    pass" "$out/suite.txt" | sort | uniq -c | sort -rn | head -8
for g in $grid; do
  build/bin/vksoftmax bench --shapes "$shapes" --dtype f32 --wg "${g%:*}" --slots "${g#*:}" --repeats 9 2>/dev/null \
    | awk -v g="$g" 'NR>3 {print g, $0}'
done | tee "$out/sweep.txt"
