#!/usr/bin/env bash
# Installs vksoftmax into a temporary prefix, builds the embedding and fused
# examples as a separate project with find_package(vksoftmax), and runs them.
# Usage: run.sh BUILD_DIR EXAMPLE_SOURCE_DIR     (the shared library of BUILD_DIR)
#        run.sh --static SOURCE_DIR EXAMPLE_SOURCE_DIR
#            (the library built anew from SOURCE_DIR with BUILD_SHARED_LIBS=OFF)
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$1" = --static ]; then
  source=$2 example=$3
  build=$work/static
  cmake -S "$source" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DVKSOFTMAX_BUILD_TESTS=OFF -DVKSOFTMAX_BUILD_HOST=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)" --target vksoftmax_c >/dev/null
  want=lib/libvksoftmax.a
else
  build=$1 example=$2
  want=lib/libvksoftmax.so
fi
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/vksoftmax/vksoftmax.h"
test -f "$work/prefix/include/vksoftmax/softmax.glsl"
test -f "$work/prefix/$want" || { echo "install: $want missing" >&2; exit 1; }
cmake -S "$example" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/consumer" >/dev/null
if [ "$1" = --static ]; then
  # Linked in: the program needs no libvksoftmax.so.
  if ldd "$work/consumer/embed" | grep -q libvksoftmax; then echo "embed links libvksoftmax dynamically" >&2; exit 1; fi
fi
LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/consumer/embed"
# The fused example, its shader compiled with the installed GLSL include.
"$work/consumer/fused"
