#!/usr/bin/env bash
# Runs the .npy header fuzzer for a bounded time from the seed corpus (a
# scratch copy, so the repo's seeds stay as they are). Usage: run.sh FUZZER SECONDS
set -euo pipefail
fuzzer=$(realpath "$1") seconds=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here"/seeds/* "$work"/
cd "$work"
"$fuzzer" -max_total_time="$seconds" -max_len=4096 -timeout=5 -rss_limit_mb=1024 -print_final_stats=1 "$work" 2>&1 | tail -n 12
