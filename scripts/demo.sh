#!/usr/bin/env bash
# Installs what kiln needs (scripts/install-deps.sh), builds it (release),
# shows what kiln finds on this machine (kiln-info), then runs the saxpy
# example on the best backend there is: a discrete GPU through CUDA, HIP or
# Vulkan, else lavapipe (Mesa's Vulkan on the CPU).
#
# usage: scripts/demo.sh [N]
#   N: saxpy's element count. KILN_BACKEND=cuda|hip|vulkan|auto (default
#   auto) and KILN_DEVICE pick the device; KILN_BUILD_ROOT the build root
#   (default: build/ in the repository, the build goes to release/ in it).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=${KILN_BUILD_ROOT:-$repo/build}
dir=$root/release

"$repo/scripts/install-deps.sh"
cd "$repo"

if [[ -f "$dir/build.ninja" ]]; then
  meson setup --reconfigure "$dir" --buildtype=release -Dtests=false
else
  meson setup "$dir" --buildtype=release -Dtests=false
fi
meson compile -C "$dir"

echo
echo "==== kiln-info"
"$dir/tools/kiln-info"
echo
echo "==== saxpy (KILN_BACKEND=${KILN_BACKEND:-auto})"
KILN_BACKEND=${KILN_BACKEND:-auto} "$dir/examples/saxpy/saxpy" "$@"
