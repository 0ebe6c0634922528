#!/usr/bin/env bash
# Geometry sweep on stable clocks: "PATH:WG:VPT" entries over some shapes.
# Usage: bench/sweep.sh SHAPES DTYPE "PATH:WG:VPT ..."
set -uo pipefail
for g in $3; do
  IFS=: read -r path wg slots <<<"$g"
  build/bin/vksoftmax bench --shapes "$1" --dtype "$2" --path "$path" --wg "$wg" --slots "$slots" --repeats 9 --warmup-ms 150 2>/dev/null \
    | awk -v g="$g" 'NR>4 {printf "%-22s %s\n", g, $0}'
done
