#!/usr/bin/env bash
# Installs with apt-get what kiln's build, tests and demo need, on Debian 12
# or Ubuntu 24.04 (or newer), OpenMPI included (for examples/mpi-heat and
# the `mpi` test suite). Only packages that are missing are installed;
# when nothing is missing, apt is not touched. The HIP toolchain is added
# when the archive has it. The CUDA toolkit is never installed from here:
# kiln looks for it at /usr/local/cuda (meson -Dcuda-path=...).
#
# KILN_NO_INSTALL=1 skips this step entirely (a machine set up by hand).
set -euo pipefail

required=(meson ninja-build pkg-config cmake gcc libc6-dev python3 libcmocka-dev
          glslang-tools glslang-dev libshaderc1 libshaderc-dev libvulkan-dev
          mesa-vulkan-drivers
          vulkan-validationlayers spirv-tools vulkan-tools
          libopenmpi-dev openmpi-bin abigail-tools)
hip=(hipcc libamdhip64-dev rocm-device-libs clang-15)

if [[ "${KILN_NO_INSTALL:-0}" == 1 ]]; then
  echo "install-deps: KILN_NO_INSTALL=1, installing nothing"
  exit 0
fi

installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

# True when the archive offers the package (needs the package lists).
in_archive() {
  local candidate
  candidate=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}')
  [[ -n "$candidate" && "$candidate" != "(none)" ]]
}

if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
  echo "install-deps: this is not a Debian or Ubuntu system; install these by hand:" >&2
  echo "  ${required[*]} (and ${hip[*]} for the HIP backend's kernels)" >&2
  exit 1
fi

missing=()
for p in "${required[@]}"; do installed "$p" || missing+=("$p"); done
missing_hip=()
for p in "${hip[@]}"; do installed "$p" || missing_hip+=("$p"); done

if (( ${#missing[@]} == 0 && ${#missing_hip[@]} == 0 )); then
  echo "install-deps: every package is installed"
  exit 0
fi

sudo=()
if (( EUID != 0 )); then
  if command -v sudo >/dev/null; then
    sudo=(sudo)
  else
    echo "install-deps: not root and no sudo; as root, run:" >&2
    echo "  apt-get install ${missing[*]} ${missing_hip[*]}" >&2
    exit 1
  fi
fi
apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)

echo "install-deps: apt-get update"
"${apt[@]}" update -q

# The HIP toolchain is optional: without it kiln builds its HIP backend
# without kernels, or not at all.
for p in "${missing_hip[@]}"; do
  if in_archive "$p"; then
    missing+=("$p")
  else
    echo "install-deps: $p is not in this system's archive; the HIP kernels may not be built"
  fi
done

if (( ${#missing[@]} > 0 )); then
  echo "install-deps: apt-get install ${missing[*]}"
  "${apt[@]}" install -y -q --no-install-recommends "${missing[@]}"
fi
