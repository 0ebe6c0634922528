#!/usr/bin/env bash
# Builds the project twice more, with AddressSanitizer + UndefinedBehavior-
# Sanitizer and with ThreadSanitizer (Debug, build-asan/ and build-tsan/),
# and runs under each the tests labelled "sanitize": the CPU reference, the
# CLI end to end, the embedding tests, the concurrency test and the symbol
# check (and, in the ASan build, the .npy fuzzer). The validation layer's own
# allocations are not ours: where a test loads the layer, LeakSanitizer is
# off, and the embedding test runs again with the layer hidden and leaks
# checked.
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
