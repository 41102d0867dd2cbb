#!/usr/bin/env bash
# Installs what kiln needs (scripts/install-deps.sh), then builds kiln and
# runs every test suite, twice:
#   1. a warning-free build (-Dwerror=true) with every backend whose
#      toolchain is here, and all suites: core, vulkan (on lavapipe where
#      there is no GPU), cuda and hip (these skip without a device);
#   2. a build with AddressSanitizer and UndefinedBehaviorSanitizer, running
#      the core and vulkan suites.
# Exits non-zero when anything failed; failing tests' logs are printed.
#
# usage: scripts/test.sh [BUILD_ROOT]
#   BUILD_ROOT (or KILN_BUILD_ROOT) holds the build directories test/ and
#   asan/, recreated on every run; default: build/ in the repository.
#   Meson options for both builds may be added with KILN_MESON_ARGS.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=${1:-${KILN_BUILD_ROOT:-$repo/build}}
mkdir -p "$root"
root=$(cd "$root" && pwd)
read -r -a extra_args <<< "${KILN_MESON_ARGS:-}"

"$repo/scripts/install-deps.sh"
cd "$repo"

if ! meson_version=$(meson --version 2>/dev/null) ||
   [[ "$(printf '%s\n' 1.0.0 "$meson_version" | sort -V | head -n1)" != 1.0.0 ]]; then
  echo "test.sh: kiln needs meson >= 1.0.0 (found: ${meson_version:-none})" >&2
  exit 1
fi

failed=()
started=$SECONDS

stage() { printf '\n==== %s (%ds)\n' "$*" $((SECONDS - started)); }

# build_and_test NAME [MESON_TEST_ARG...] -- [MESON_SETUP_ARG...]
build_and_test() {
  local name=$1; shift
  local test_args=()
  while [[ $1 != -- ]]; do test_args+=("$1"); shift; done
  shift
  local dir=$root/$name
  local setup_args=(-Dwerror=true "$@" "${extra_args[@]}")
  rm -rf "$dir"
  stage "$name: meson setup ${setup_args[*]}"
  if ! meson setup "$dir" "${setup_args[@]}"; then
    failed+=("$name: meson setup")
    return
  fi
  stage "$name: meson compile"
  if ! meson compile -C "$dir"; then
    failed+=("$name: meson compile")
    return
  fi
  stage "$name: meson test --print-errorlogs ${test_args[*]}"
  if ! meson test -C "$dir" --print-errorlogs "${test_args[@]}"; then
    failed+=("$name: meson test (log: $dir/meson-logs/testlog.txt)")
  fi
}

build_and_test test --
# Test processes abort at the first report. scripts/lsan.supp suppresses the
# leaks of the Khronos validation layer (only third-party code, never kiln).
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1:print_summary=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1
export LSAN_OPTIONS=suppressions=$repo/scripts/lsan.supp:print_suppressions=0
build_and_test asan --suite core --suite vulkan --timeout-multiplier 4 -- \
  -Db_sanitize=address,undefined -Db_lundef=false

stage "done"
if (( ${#failed[@]} > 0 )); then
  printf 'test.sh: FAILED:\n' >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "test.sh: all builds and tests passed"
