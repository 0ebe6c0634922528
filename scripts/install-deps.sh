#!/usr/bin/env bash
# Installs the Debian 12 packages vksoftmax builds and tests with; quiet and
# quick when all are there. Idempotent.
set -euo pipefail
packages=(
  cmake g++ make pkg-config
  libvulkan-dev libvulkan1 glslang-tools spirv-tools
  libgtest-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  libcli11-dev nlohmann-json3-dev libfmt-dev
  python3 python3-numpy python3-scipy
  clang libclang-rt-14-dev
  gnuplot-nox
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
