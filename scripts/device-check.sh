#!/usr/bin/env bash
# Runs on the device machine (see ../shared/device-vulkan.md): unpacks the
# carried Vulkan loader (and validation layer), then lists devices, runs the
# demo and the whole GPU test suite on the default device. Build here first
# and carry build/bin and .gl. Logs go to $OUT when it is set.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
if ! build/bin/vksoftmax devices >/dev/null 2>&1; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | tee "$out/gpu.txt"
build/bin/vksoftmax devices | tee "$out/devices.txt"
build/bin/vksoftmax demo | tee "$out/demo.txt"; demo_rc=${PIPESTATUS[0]}
build/bin/vksoftmax_tests --gtest_brief=1 --gtest_output=json:"$out/gtest.json" 2>&1 | tee "$out/tests.txt" | grep -vE "Validation|^\s*$" | tail -25
tests_rc=${PIPESTATUS[0]}
echo "demo rc=$demo_rc tests rc=$tests_rc"
[ "$demo_rc" -eq 0 ] && [ "$tests_rc" -eq 0 ]
