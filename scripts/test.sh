#!/usr/bin/env bash
# Installs what kiln needs (scripts/install-deps.sh), then builds kiln and
# runs the test suites in three builds:
#   1. a warning-free build (-Dwerror=true) with every backend whose
#      toolchain is here, and all suites: core, vulkan (on lavapipe where
#      there is no GPU), cuda and hip (these skip without a device); then
#      that build installed into a staging tree (meson install --destdir)
#      and used from there as a user would: kiln-info and kiln-embed, a C
#      program built with pkg-config, and examples/aot-app built with meson
#      against the staged kiln and run on Vulkan;
#   2. a build with AddressSanitizer and UndefinedBehaviorSanitizer, running
#      the core and vulkan suites;
#   3. a Vulkan-only build with ThreadSanitizer, running the core suite and
#      the conformance suite's thread tests (threads_*) on lavapipe.
# Exits non-zero when anything failed; failing tests' logs are printed.
#
# usage: scripts/test.sh [BUILD_ROOT]
#   BUILD_ROOT (or KILN_BUILD_ROOT) holds the build directories test/,
#   asan/ and tsan/, the staging tree stage/ and the install check's
#   install-check/, recreated on every run; default: build/ in the
#   repository. Meson options for every build may be added with
#   KILN_MESON_ARGS.
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
built=() # the builds that compiled
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
  built+=("$name")
  stage "$name: meson test --print-errorlogs ${test_args[*]}"
  if ! meson test -C "$dir" --print-errorlogs "${test_args[@]}"; then
    failed+=("$name: meson test (log: $dir/meson-logs/testlog.txt)")
  fi
}

# check_install NAME: installs build NAME into $root/stage with --destdir
# and uses it from there, away from the build tree. The installed programs
# must find libkiln through their rpath (LD_LIBRARY_PATH is unset), and
# pkg-config reads the staged kiln.pc with the staging tree as its sysroot,
# which is what a --destdir tree is. Vulkan runs on lavapipe without a GPU.
check_install() {
  local dir=$root/$1 dest=$root/stage work=$root/install-check
  rm -rf "$dest" "$work"
  mkdir -p "$work"
  stage "install: meson install --destdir $dest"
  if ! meson install -C "$dir" --destdir "$dest" --quiet; then
    failed+=("install: meson install -C $dir")
    return
  fi
  # The installed bindir and libdir, absolute (either option may be).
  local dirs bin lib
  dirs=$(meson introspect "$dir" --buildoptions | python3 -c '
import json, os, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(os.path.join(o["prefix"], o["bindir"]), os.path.join(o["prefix"], o["libdir"]))')
  read -r bin lib <<< "$dirs"
  bin=$dest$bin
  lib=$dest$lib
  local -x PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
  local user_env=(env -u LD_LIBRARY_PATH)

  stage "install: staged kiln-info, without LD_LIBRARY_PATH"
  local program
  for program in "$bin/kiln-info" "$bin/kiln-bench"; do
    if ! "${user_env[@]}" ldd "$program" |
         grep -F "libkiln.so.0 => $dest/"; then
      failed+=("install: $program does not find libkiln in $lib")
    fi
  done
  if ! "${user_env[@]}" "$bin/kiln-info"; then
    failed+=("install: staged kiln-info")
  fi

  stage "install: staged kiln-embed, a C program built with pkg-config"
  local flags
  if ! glslangValidator --quiet --target-env vulkan1.2 -V -e scale \
         --source-entrypoint main -o "$work/scale.spv" \
         "$repo/examples/aot-app/scale.comp" ||
     ! "${user_env[@]}" "$bin/kiln-embed" --header "$work/images.h" \
         "$work/images.c" check_images "$work/scale.spv" ||
     ! flags=$(pkg-config --cflags --libs kiln); then
    failed+=("install: staged kiln-embed or pkg-config kiln")
  else
    cat > "$work/check.c" <<'EOF'
#include <kiln/kiln.h>
#include <stdio.h>
#include "images.h"
int main(void) {
  printf("kiln %s, %zu image(s), the first %s\n", kiln_version_string(),
         check_images_count, kiln_image_format_name(check_images[0].format));
  return kiln_version() == KILN_VERSION && check_images_count == 1 &&
                 check_images[0].format == KILN_IMAGE_SPIRV
             ? 0
             : 1;
}
EOF
    # pkg-config's flags are split into words on purpose.
    # shellcheck disable=SC2086
    if ! cc -std=c11 -Wall -Wextra -Wpedantic -Werror -I"$work" \
           -o "$work/check" "$work/check.c" "$work/images.c" $flags ||
       ! LD_LIBRARY_PATH=$lib "$work/check"; then
      failed+=("install: a C program against the staged kiln")
    fi
  fi

  stage "install: examples/aot-app built with meson against the staged kiln"
  local app=$work/aot-app
  if ! PATH=$bin:$PATH meson setup "$app" "$repo/examples/aot-app" \
         -Dwerror=true ||
     ! PATH=$bin:$PATH meson compile -C "$app"; then
    failed+=("install: examples/aot-app build")
  elif ! "${user_env[@]}" KILN_BACKEND=vulkan "$app/app"; then
    failed+=("install: examples/aot-app run")
  fi
}

build_and_test test --
if [[ " ${built[*]} " == *" test "* ]]; then
  check_install test
fi
# Test processes abort at the first report. scripts/lsan.supp suppresses the
# leaks of the Khronos validation layer (only third-party code, never kiln).
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1:print_summary=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1
export LSAN_OPTIONS=suppressions=$repo/scripts/lsan.supp:print_suppressions=0
build_and_test asan --suite core --suite vulkan --timeout-multiplier 4 -- \
  -Db_sanitize=address,undefined -Db_lundef=false

# ThreadSanitizer on what runs threads: the thread tests (8 threads each,
# 2000 iterations in the first) and the core suite. Vulkan only, as lavapipe
# runs it anywhere; the validation layer stays off (it is not built with
# TSan either, and triples the time). tests/tsan.supp suppresses reports
# inside the Vulkan loader and lavapipe, never kiln's; any other report
# stops the process with TSan's exit code 66. GCC's TSan does not model
# atomic_thread_fence (core/object.c's registry uses two, around atomics
# only), so its warning about them stays a warning here.
export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:suppressions=$repo/tests/tsan.supp:print_suppressions=0"
build_and_test tsan --suite core --timeout-multiplier 4 -- \
  -Db_sanitize=thread -Db_lundef=false -Dcuda=disabled -Dhip=disabled \
  -Dexamples=false -Dtools=false -Dc_args=-Wno-error=tsan
if [[ " ${built[*]} " == *" tsan "* ]]; then
  stage "tsan: kiln-conformance threads_* on Vulkan"
  if ! KILN_BACKEND=vulkan KILN_CONF_FILTER='threads_*' \
       KILN_CACHE_DIR="$root/tsan/kiln-cache" \
       "$root/tsan/tests/conformance/kiln-conformance"; then
    failed+=("tsan: kiln-conformance threads_* on Vulkan")
  fi
fi

stage "done"
if (( ${#failed[@]} > 0 )); then
  printf 'test.sh: FAILED:\n' >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "test.sh: all builds and tests passed"
