#!/usr/bin/env bash
# Does a case's speed depend on what was allocated and freed before it?
# The same shapes in a fresh process, first f16 alone, then after the suite.
set -uo pipefail
b=build/bin/vksoftmax
echo "== fresh process, f16 first"; $b bench --shapes 1024x32768,20480x4096,4096x1024 --dtype f16 --repeats 9 | tail -3
echo "== fresh process, f32"; $b bench --shapes 1024x32768,20480x4096,4096x1024 --dtype f32 --repeats 9 | tail -3
echo "== whole suite, both dtypes"; $b bench --shapes suite --repeats 9 --json "${OUT:-/tmp}/suite.json" | tail -31
