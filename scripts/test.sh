#!/usr/bin/env bash
# Installs what kiln needs (scripts/install-deps.sh), then builds kiln and
# runs the test suites in three builds:
#   1. a warning-free build (-Dwerror=true) with every backend whose
#      toolchain is here, and all suites: core (part of it again under
#      KILN_DEBUG=reorder), vulkan (on lavapipe where there is no GPU; the
#      conformance suite plain, on the transfer lane, and under
#      KILN_DEBUG=reorder), cuda and hip (these skip without a device); then
#      that build installed into a staging tree (meson install --destdir)
#      and used from there as a user would: kiln-info and kiln-embed, a C
#      program built with pkg-config, and examples/aot-app built with meson
#      and with CMake (tests/install/cmake-app) against the staged kiln and
#      run on Vulkan; then that build's libkiln.so.0 checked against the
#      ABI baseline (scripts/abi-check.sh);
#   2. a build with AddressSanitizer and UndefinedBehaviorSanitizer, running
#      the core and vulkan suites;
#   3. a Vulkan-only build with ThreadSanitizer, running the core suite and
#      the conformance suite's thread tests (threads_*) on lavapipe, with
#      KILN_CONF_THREAD_ITERS=500 (a quarter of their default work), plain
#      and under KILN_DEBUG=reorder;
# then the mutants CI can catch (scripts/mutants.sh --where ci: one-line
# bugs kept in tests/mutants, each of which the suites must catch).
# Every stage has a time limit (each test in meson test also its own): a
# stage that runs past it is stopped and fails, saying so. At the end it
# prints what was NOT tested: for each build and suite, the cases skipped
# and why (every "kiln-skip: " line of the test logs and of the TSan
# conformance run, and each test meson reports as SKIP, exit 77, with the
# reason it printed), then the run's total time.
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

started=$SECONDS

# limited SECONDS COMMAND...: runs COMMAND, stopped (TERM, then KILL 30 s
# later) once it has run SECONDS; returns its status, or 124 when it was
# stopped, saying so on stderr. $why is then " (stopped after SECONDS s)",
# else empty, for the failure's line. timeout runs COMMAND in a process
# group of its own, which a ^C at the terminal does not reach: it runs in
# the background, so that the trap below can pass the ^C on while this
# shell waits.
why=
limited_pid=
limited() {
  local limit=$1 rc=0
  shift
  why=
  timeout --kill-after=30 "$limit" "$@" &
  limited_pid=$!
  wait "$limited_pid" || rc=$?
  limited_pid=
  if (( rc == 124 || rc == 137 )); then
    why=" (stopped after $limit s)"
    printf 'test.sh: TIMEOUT: %s ran past %d s and was stopped\n' "$*" \
      "$limit" >&2
    rc=124
  fi
  return "$rc"
}

trap 'if [[ -n $limited_pid ]]; then kill "$limited_pid"; fi; exit 130' INT

limited 3600 "$repo/scripts/install-deps.sh"
cd "$repo"

if ! meson_version=$(meson --version 2>/dev/null) ||
   [[ "$(printf '%s\n' 1.0.0 "$meson_version" | sort -V | head -n1)" != 1.0.0 ]]; then
  echo "test.sh: kiln needs meson >= 1.0.0 (found: ${meson_version:-none})" >&2
  exit 1
fi

failed=()
built=() # the builds that compiled

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
  if ! limited 600 meson setup "$dir" "${setup_args[@]}"; then
    failed+=("$name: meson setup$why")
    return
  fi
  stage "$name: meson compile"
  if ! limited 3600 meson compile -C "$dir"; then
    failed+=("$name: meson compile$why")
    return
  fi
  built+=("$name")
  # Each test has its own limit too (meson's, times the multiplier).
  stage "$name: meson test --print-errorlogs ${test_args[*]}"
  if ! limited 5400 meson test -C "$dir" --print-errorlogs "${test_args[@]}"
  then
    failed+=("$name: meson test$why (log: $dir/meson-logs/testlog.txt)")
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
  if ! limited 600 meson install -C "$dir" --destdir "$dest" --quiet; then
    failed+=("install: meson install -C $dir$why")
    return
  fi
  # The installed bindir and libdir, absolute (either option may be), and
  # the prefix.
  local dirs bin lib prefix
  dirs=$(limited 120 meson introspect "$dir" --buildoptions | python3 -c '
import json, os, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(os.path.join(o["prefix"], o["bindir"]), os.path.join(o["prefix"], o["libdir"]),
      o["prefix"])')
  read -r bin lib prefix <<< "$dirs"
  bin=$dest$bin
  lib=$dest$lib
  prefix=$dest$prefix
  local -x PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
  local user_env=(env -u LD_LIBRARY_PATH)

  stage "install: staged kiln-info, without LD_LIBRARY_PATH"
  local program
  for program in "$bin/kiln-info" "$bin/kiln-bench"; do
    if ! limited 120 "${user_env[@]}" ldd "$program" |
         grep -F "libkiln.so.0 => $dest/"; then
      failed+=("install: $program does not find libkiln in $lib")
    fi
  done
  if ! limited 300 "${user_env[@]}" "$bin/kiln-info"; then
    failed+=("install: staged kiln-info$why")
  fi

  stage "install: staged kiln-embed, a C program built with pkg-config"
  local flags
  if ! limited 120 glslangValidator --quiet --target-env vulkan1.2 -V \
         -e scale --source-entrypoint main -o "$work/scale.spv" \
         "$repo/examples/aot-app/scale.comp" ||
     ! limited 120 "${user_env[@]}" "$bin/kiln-embed" \
         --header "$work/images.h" "$work/images.c" check_images \
         "$work/scale.spv" ||
     ! flags=$(limited 120 pkg-config --cflags --libs kiln); then
    failed+=("install: staged kiln-embed or pkg-config kiln$why")
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
    if ! limited 300 cc -std=c11 -Wall -Wextra -Wpedantic -Werror \
           -I"$work" -o "$work/check" "$work/check.c" "$work/images.c" \
           $flags ||
       ! limited 120 env LD_LIBRARY_PATH="$lib" "$work/check"; then
      failed+=("install: a C program against the staged kiln$why")
    fi
  fi

  stage "install: examples/aot-app built with meson against the staged kiln"
  local app=$work/aot-app
  if ! limited 600 env PATH="$bin:$PATH" meson setup "$app" \
         "$repo/examples/aot-app" -Dwerror=true ||
     ! limited 600 env PATH="$bin:$PATH" meson compile -C "$app"; then
    failed+=("install: examples/aot-app build$why")
  elif ! limited 300 "${user_env[@]}" KILN_BACKEND=vulkan "$app/app"; then
    failed+=("install: examples/aot-app run$why")
  fi

  # The same program through kiln's CMake package (kiln::kiln, kiln::embed);
  # it finds libkiln by the build rpath CMake gives imported libraries.
  stage "install: tests/install/cmake-app built with CMake against the staged kiln"
  local cmake_app=$work/cmake-app
  if ! limited 600 cmake -S "$repo/tests/install/cmake-app" -B "$cmake_app" \
         -DCMAKE_PREFIX_PATH="$prefix" ||
     ! limited 600 cmake --build "$cmake_app"; then
    failed+=("install: tests/install/cmake-app build$why")
  elif ! limited 300 "${user_env[@]}" KILN_BACKEND=vulkan "$cmake_app/app"
  then
    failed+=("install: tests/install/cmake-app run$why")
  fi
}

build_and_test test --
if [[ " ${built[*]} " == *" test "* ]]; then
  check_install test
  stage "abi: scripts/abi-check.sh against abi/libkiln.so.0.abi"
  if ! limited 600 "$repo/scripts/abi-check.sh" "$root/test"; then
    failed+=("abi: libkiln.so.0 against abi/libkiln.so.0.abi$why")
  fi
fi
# Test processes abort at the first report. scripts/lsan.supp suppresses the
# leaks of the Khronos validation layer (only third-party code, never kiln).
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1:print_summary=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:print_summary=1
export LSAN_OPTIONS=suppressions=$repo/scripts/lsan.supp:print_suppressions=0
build_and_test asan --suite core --suite vulkan --timeout-multiplier 4 -- \
  -Db_sanitize=address,undefined -Db_lundef=false

# ThreadSanitizer on what runs threads: the thread tests (8 threads each,
# 500 iterations in the first, a quarter of their default: TSan needs the
# threads to meet, not to meet 2000 times) and the core suite. Vulkan
# only, as lavapipe runs it anywhere; the validation layer stays off (it is
# not built with TSan either, and triples the time). tests/tsan.supp
# suppresses reports inside the Vulkan loader and lavapipe, and of kiln's
# code only its copy out of device memory, whose order lavapipe keeps
# where TSan cannot see it; any other report stops the process with
# TSan's exit code 66. GCC's TSan
# does not model atomic_thread_fence (core/base/object.c's registry uses two,
# around atomics only), so its warning about them stays a warning here.
export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:suppressions=$repo/tests/tsan.supp:print_suppressions=0"
build_and_test tsan --suite core --timeout-multiplier 4 -- \
  -Db_sanitize=thread -Db_lundef=false -Dcuda=disabled -Dhip=disabled \
  -Dexamples=false -Dtools=false -Dc_args=-Wno-error=tsan
# The thread tests run twice: as they are, and under KILN_DEBUG=reorder,
# whose held submissions are released by whichever thread waits first.
tsan_logs=()
tsan_failed=()
if [[ " ${built[*]} " == *" tsan "* ]]; then
  for debug in "" reorder; do
    tsan_log=$root/tsan/conformance-threads${debug:+-$debug}.txt
    tsan_logs+=("$tsan_log")
    stage "tsan: kiln-conformance threads_* on Vulkan${debug:+, KILN_DEBUG=$debug}"
    # Its output is kept, through tee, for the summary of what was skipped.
    # It takes about 6 s on 2 cores (18 s at the default 2000 iterations).
    tsan_rc=0
    exec {log_fd}> >(tee "$tsan_log")
    tee_pid=$!
    limited 600 env KILN_BACKEND=vulkan KILN_CONF_FILTER='threads_*' \
      KILN_DEBUG="$debug" KILN_CONF_THREAD_ITERS=500 \
      KILN_CACHE_DIR="$root/tsan/kiln-cache" \
      "$root/tsan/tests/conformance/kiln-conformance" >&"$log_fd" 2>&1 ||
      tsan_rc=$?
    exec {log_fd}>&-
    wait "$tee_pid"
    if (( tsan_rc != 0 )); then
      failed+=("tsan: kiln-conformance threads_* on Vulkan${debug:+ (KILN_DEBUG=$debug)}$why (exit $tsan_rc)")
      tsan_failed+=("$tsan_log")
    fi
    printf 'exit status: %d\n' "$tsan_rc" >> "$tsan_log"
  done
fi

# The mutants that lavapipe can catch (tests/mutants, docs/testing.md):
# each one-line bug applied to a scratch copy of HEAD and built
# incrementally, and the runs its header names must fail; a survivor
# fails CI, naming it.
stage "mutants: scripts/mutants.sh --where ci"
if ! limited 2400 "$repo/scripts/mutants.sh" --where ci --work "$root/mutants"; then
  failed+=("mutants: scripts/mutants.sh --where ci$why (log: $root/mutants/logs)")
fi

stage "done"

# not_tested LABEL:TESTLOG... : what the test logs say was skipped, by
# build and suite, each reason with its count and cases. A TESTLOG of
# meson's (meson-logs/testlog.txt) names its tests; any other file is one
# program's output, ending with the "exit status: N" line written above.
not_tested() {
  local script
  script=$(cat <<'EOF'
import collections, re, sys

# (build, suite) -> reason -> [case, ...]
skips = collections.defaultdict(lambda: collections.defaultdict(list))

def reason_of(lines):
    """The line that says why a program skipped (exit 77): its kiln-skip
    line, else the first that says skip, else the first that says what
    is missing, else its first words."""
    lines = [l.strip() for l in lines if re.search(r"[A-Za-z]", l)]
    for l in lines:
        if l.startswith("kiln-skip: "):
            return l.split(": ", 2)[-1]
    for pattern in (r"skip", r"unavailable|cannot run|no device|not found"):
        for l in lines:
            if re.search(pattern, l, re.I):
                return l
    return lines[0] if lines else "(it printed no reason)"

def add_output(build, suite, test, lines, status):
    if status == 77:
        skips[(build, suite)][reason_of(lines)].append(test + " (all of it)")
        return
    for l in lines:
        m = re.match(r"kiln-skip: ([^:]*): (.*)", l.strip())
        if m:
            skips[(build, suite)][m.group(2)].append(test + ": " + m.group(1))

for arg in sys.argv[1:]:
    build, path = arg.split(":", 1)
    try:
        text = open(path, errors="replace").read().splitlines()
    except OSError as e:
        skips[(build, "?")]["its log is missing: %s" % e].append(path)
        continue
    if not path.endswith("testlog.txt"):
        status = 0
        if text and text[-1].startswith("exit status: "):
            status = int(text.pop()[len("exit status: "):])
        add_output(build, "conformance", "kiln-conformance threads_*", text,
                   status)
        continue
    test = suite = None
    status, lines, section = 0, [], None
    for l in text + ["=" * 78]:
        if re.match(r"^=+ \d+/\d+ =+$", l):
            test, status, lines, section = None, 0, [], None
        elif l.startswith("test:") and section is None:
            # "kiln:vulkan / name", or "kiln:vulkan+examples / name"
            full = l[len("test:"):].strip()
            suite, _, test = full.partition(" / ")
            suite = suite.split(":", 1)[-1]
        elif l.startswith("result:") and section is None:
            m = re.search(r"exit status (\d+)", l)
            status = int(m.group(1)) if m else 0
        elif re.match(r"^-+ (stdout|stderr) -+$", l):
            section = "out"
        elif re.match(r"^=+$", l):
            if test:
                add_output(build, suite, test, lines, status)
            test, section = None, None
        elif section:
            lines.append(l)

print("\ntest.sh: what was NOT tested (skipped cases, by build and suite):")
if not skips:
    print("  nothing: no case was skipped")
for (build, suite) in sorted(skips):
    reasons = skips[(build, suite)]
    total = sum(len(c) for c in reasons.values())
    print("  %s, suite %s: %d skipped" % (build, suite, total))
    for reason, cases in sorted(reasons.items(), key=lambda r: -len(r[1])):
        print("    %d: %s" % (len(cases), reason))
        print("       %s" % ", ".join(cases))
EOF
)
  limited 120 python3 -c "$script" "$@"
}

logs=()
for name in test asan tsan; do
  if [[ " ${built[*]} " == *" $name "* ]]; then
    logs+=("$name:$root/$name/meson-logs/testlog.txt")
  fi
done
for tsan_log in "${tsan_logs[@]}"; do
  if [[ -f $tsan_log ]]; then logs+=("tsan:$tsan_log"); fi
done
if ! not_tested "${logs[@]}"; then
  failed+=("the summary of what was not tested$why")
fi
elapsed=$((SECONDS - started))
printf '\ntest.sh: the run took %dm%02ds\n' $((elapsed / 60)) $((elapsed % 60))

# A failed TSan run's report is printed again here, last, where a CI log
# cut to its tail still shows it.
for tsan_log in "${tsan_failed[@]}"; do
  printf '\ntest.sh: the report that stopped %s:\n' "$tsan_log" >&2
  if grep -q ThreadSanitizer "$tsan_log"; then
    sed -n '/ThreadSanitizer/,$p' "$tsan_log" | head -n 120 >&2
  else
    tail -n 40 "$tsan_log" >&2
  fi
done
if (( ${#failed[@]} > 0 )); then
  printf 'test.sh: FAILED:\n' >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "test.sh: all builds and tests passed"
