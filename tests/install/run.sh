#!/usr/bin/env bash
# Installs the built vksoftmax into a temporary prefix, builds the embedding
# example as a separate project with find_package(vksoftmax), and runs it.
# Usage: run.sh BUILD_DIR EXAMPLE_SOURCE_DIR
set -euo pipefail
build=$1 example=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/vksoftmax/vksoftmax.h"
cmake -S "$example" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/consumer/embed"
