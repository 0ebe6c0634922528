#!/usr/bin/env bash
# Builds the project twice more, with AddressSanitizer + UndefinedBehavior-
# Sanitizer and with ThreadSanitizer (Debug, build-asan/ and build-tsan/),
# and runs under each the tests labelled "sanitize": the CPU reference, the
# plan decisions, the CLI end to end, the embedding tests, the concurrency
# test and the symbol check (and, in the ASan build, the .npy fuzzer).
# What the drivers and the validation layer do is not ours: see
# tests/CMakeLists.txt (drivers kept loaded, suppressions by module name).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
for checks in address,undefined thread; do
  if [ "$checks" = thread ]; then dir=build-tsan; else dir=build-asan; fi
  echo "== sanitize: $checks in $dir"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DVKSOFTMAX_SANITIZE="$checks" >/dev/null
  cmake --build "$dir" -j "$jobs"
  (cd "$dir" && ctest -L sanitize --output-on-failure -j "$jobs")
done
