#!/usr/bin/env bash
# Builds kiln on a GPU machine and runs every suite there: CUDA, Vulkan through
# the vendor driver, and HIP through the test-only HIP-on-CUDA shim. Used on
# the H100 that kiln is verified on (no package access there: the Vulkan
# loader, validation layer, glslang and cmocka come from .gpu/, gathered with
# ../shared/gpu/fetch-debs.sh; add `apt-get download libshaderc-dev
# glslang-dev` there too, so that kiln's shaderc bundle, and with it run-time
# GLSL compiles and SPIRV-Tools' validator, is built and tested on the GPU).
# Logs go to $OUT (default /tmp/kiln-gpu).
#
#   scripts/gpu-verify.sh [build|test|conformance|conformance-main|conformance-threads|conformance-reorder|conformance-groups|sanitize|examples|mpi|ci-build|endurance|bench|nsys|mutants|all]...
#
# conformance is conformance-main (every group but the thread groups) and
# then conformance-threads: the two halves fit the GPU machine's 10-minute
# commands apart. mutants (not part of all) runs scripts/mutants.sh on the
# mutants that need a CUDA or HIP device (docs/testing.md), built with
# build's options in a build of its own, $B-mutants; run it as a command of
# its own; KILN_MUTANTS="NAME..." runs only those. conformance-groups runs
# only the groups KILN_GPU_GROUPS lists, on every backend.
set -uo pipefail
OUT=${OUT:-/tmp/kiln-gpu}
B=${KILN_GPU_BUILD:-/tmp/kiln-gpu-build}
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .gpu/gpu-env.sh
status=0
step() { echo "== $* (at $SECONDS s)"; }
# Every backend, HIP through the HIP-on-CUDA shim; the mutants' build too.
backends=(-Dcuda=enabled -Dvulkan=enabled -Dhip=enabled -Dhip-platform=nvidia)

build() {
  step build
  meson setup "$B" -Dwerror=true "${backends[@]}" \
    > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; return 1; }
  ninja -C "$B" >> "$OUT/build.log" 2>&1 || { tail -60 "$OUT/build.log"; return 1; }
  { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    "$B/tools/kiln-info"; } > "$OUT/kiln-info.txt" 2>&1
}

tests() {
  # Every meson test but the conformance suites, which `conformance` runs
  # (the Vulkan variants' thread group too, under the layer without
  # synchronization validation, which deadlocks in it; see
  # conformance_threads)
  # (the list's form differs between meson versions: "kiln:vulkan / name"
  # and "vulkan - kiln:name").
  step test
  local names
  names=$(meson test -C "$B" --list 2>/dev/null | grep -E ' (/|-) ' |
          awk '{print $NF}' | grep -vE '(^|:)conformance(-[a-z-]+)?$')
  # shellcheck disable=SC2086
  meson test -C "$B" --print-errorlogs --num-processes 3 --timeout-multiplier 2 \
    $names > "$OUT/test-summary.log" 2>&1 || status=1
  cp "$B/meson-logs/testlog.txt" "$OUT/testlog.txt"
  grep -E '^ *[0-9]+/[0-9]+ ' "$OUT/test-summary.log" | grep -vE ' OK ' || true
  grep -E '^(Ok|Fail|Skipped|Timeout):' "$OUT/test-summary.log"
}

# One conformance run of backend $1 on groups $2 (KILN_CONF_GROUPS), killed
# after $3 seconds; a run that is killed first writes every thread's stack
# (SIGUSR2 to each thread; main.c's handler), resolved with addr2line.
conf_run() {
  local be=$1 groups=$2 limit=$3 log=$OUT/conf-$1-${2%%,*}.txt
  local C=$B/tests/conformance/kiln-conformance
  KILN_BACKEND=$be KILN_HIP_LIBRARY=$shim \
    KILN_VULKAN_VALIDATION=${KILN_VULKAN_VALIDATION:-1} \
    KILN_CONF_GROUPS=$groups "$C" > "$log" 2>&1 &
  local pid=$! waited=0
  while kill -0 $pid 2>/dev/null && [ $waited -lt "$limit" ]; do
    sleep 1; waited=$((waited + 1))
  done
  if kill -0 $pid 2>/dev/null; then
    echo "STUCK after $limit s: stacks follow" >> "$log"
    for task in /proc/$pid/task/*; do
      python3 -c "import ctypes,sys; ctypes.CDLL(None).syscall(234, int(sys.argv[1]), int(sys.argv[2]), 12)" \
        $pid "${task##*/}" 2>/dev/null
    done
    sleep 3
    kill -9 $pid
    # "binary(+0x1234) [0x...]" lines: the offset within the binary.
    grep -oE '^[^ (]+\(\+0x[0-9a-f]+\)' "$log" | sort -u | while IFS='(' read -r bin off; do
      echo "$bin(${off%)}) = $(addr2line -f -C -e "$bin" "${off%)}" | tr '\n' ' ')"
    done >> "$log"
  fi
  wait $pid
  local rc=$?
  echo "-- conformance $be [$groups]: rc=$rc, $(grep -c 'OK \]' "$log") OK, $(grep -c '^\[  FAILED  \] [a-z]' "$log") failed$(grep -q '^STUCK' "$log" && echo ', STUCK')"
  grep -E '^\[  FAILED  \] [a-z]' "$log" | sort -u
  # The groups that took 10 s or more (main.c times each), and the tests
  # that took 5 s or more (printed between their RUN and OK lines).
  grep -oE 'group [a-z-]+ took [0-9.]+ s' "$log" |
    awk '$4 >= 10 { printf "   %s %s s\n", $2, $4 }'
  awk '/^\[ RUN / { s = ""; next }
       /^kiln-conformance: test took / { s = $4; next }
       s != "" && /^\[ *(OK|FAILED|ERROR|SKIPPED) *\] / {
         printf "     %s %s s\n", $NF, s; s = "" }' "$log"
  # Also in the log: a run in the background cannot set `status`.
  echo "conf_run rc=$rc" >> "$log"
  [ $rc -eq 0 ] || status=1
}

conformance_main() {
  # The suites of the three backends side by side, but the groups that
  # exhaust the device, fault or stall it (errors, faults) each alone.
  # HIP runs through the HIP-on-CUDA shim.
  step conformance-main
  shim=$(find "$B/tests/hip" -name 'libkiln-hip-shim.so' | head -n 1)
  local shared=device,buffers,suballoc,stream-memory,kernels,builtins,hgemm,streams,peers,peer-memory,graphs,branches,sync,interop,vendor,compile,bad-input,guard,globals,trace,printf,attributes,corpus
  for be in cuda hip vulkan; do conf_run $be $shared 400 & done
  wait
  for be in cuda hip vulkan; do
    tail -n 1 "$OUT/conf-$be-device.txt" | grep -q 'rc=0$' || status=1
  done
  for be in cuda hip vulkan; do conf_run $be errors,faults 240; done
  # meson's conformance-transfer-lane: Vulkan's copies on the compute
  # queues instead of the transfer queue.
  cp "$OUT/conf-vulkan-device.txt" "$OUT/conf-vulkan-queues.txt"
  KILN_VULKAN_TRANSFER=compute conf_run vulkan $shared 400
  mv "$OUT/conf-vulkan-device.txt" "$OUT/conf-vulkan-transfer-lane.txt"
  mv "$OUT/conf-vulkan-queues.txt" "$OUT/conf-vulkan-device.txt"
}

conformance_groups() {
  # Only the groups KILN_GPU_GROUPS names (a comma-separated list), on the
  # three backends side by side: a quick check of what a change touched.
  step conformance-groups "${KILN_GPU_GROUPS:?set KILN_GPU_GROUPS}"
  shim=$(find "$B/tests/hip" -name 'libkiln-hip-shim.so' | head -n 1)
  for be in cuda hip vulkan; do conf_run $be "$KILN_GPU_GROUPS" 300 & done
  wait
  for be in cuda hip vulkan; do
    tail -n 1 "$OUT/conf-$be-${KILN_GPU_GROUPS%%,*}.txt" | grep -q 'rc=0$' ||
      status=1
  done
}

conformance_reorder() {
  # The groups whose tests order work between streams, under
  # KILN_DEBUG=reorder (docs/testing.md): a missing wait between streams
  # shows on every backend, not only where the driver happens to lose the
  # race.
  step conformance-reorder
  shim=$(find "$B/tests/hip" -name 'libkiln-hip-shim.so' | head -n 1)
  for be in cuda hip vulkan; do
    KILN_DEBUG=reorder conf_run $be streams,stream-memory,graphs,branches,sync,peers,peer-memory 300 &
  done
  wait
  for be in cuda hip vulkan; do
    tail -n 1 "$OUT/conf-$be-streams.txt" | grep -q 'rc=0$' || status=1
  done
}

nsys_trace() {
  # KILN_TRACE=nvtx under Nsight Systems: kiln's NVTX ranges must show in
  # the report beside the kernels they name.
  step nsys
  local nsys
  nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -n 1)
  [ -n "$nsys" ] || { echo "SKIPPED: no nsys on this machine"; return 0; }
  KILN_BACKEND=cuda KILN_TRACE=nvtx "$nsys" profile -t cuda,nvtx -o "$OUT/kiln-trace" \
    --force-overwrite true "$B/examples/saxpy/saxpy" > "$OUT/nsys.txt" 2>&1 || status=1
  "$nsys" stats -r nvtx_sum,cuda_gpu_kern_sum "$OUT/kiln-trace.nsys-rep" >> "$OUT/nsys.txt" 2>&1 || status=1
  grep -E 'kiln|saxpy|Range|Name' "$OUT/nsys.txt" | head -n 30
}

conformance_threads() {
  # The thread groups, each alone.
  step conformance-threads
  shim=$(find "$B/tests/hip" -name 'libkiln-hip-shim.so' | head -n 1)
  # Vulkan's thread tests under the layer without synchronization
  # validation: the layer's 1.3.239 deadlocks in it when threads submit
  # while others wait (README, KILN_VULKAN_VALIDATION).
  # CUDA's thread group creates and destroys contexts while others launch:
  # 166 to 275 s on an H200, past 240 s on the H100 of 2026-11-26.
  for be in cuda hip; do conf_run $be threads 420; done
  KILN_VULKAN_VALIDATION=core conf_run vulkan threads 240
}

sanitize() {
  step compute-sanitizer
  # API errors are left out: the bad-input tests provoke some on purpose,
  # and the sync policies' polling meets CUDA_ERROR_NOT_READY. The faults
  # group is left out too (its children fault on purpose), and threads
  # (slow under memcheck, which runs kernels one at a time).
  KILN_CONF_GROUPS=${KILN_CONF_GROUPS:-device,buffers,kernels,builtins,hgemm,streams,peers,peer-memory,graphs,branches,sync,interop,compile,bad-input,guard,globals,vendor,errors} \
  KILN_BACKEND=cuda compute-sanitizer --tool memcheck --leak-check full \
    --report-api-errors no --error-exitcode 3 \
    "$B/tests/conformance/kiln-conformance" > "$OUT/memcheck.log" 2>&1
  rc=$?
  echo "memcheck rc=$rc: $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$OUT/memcheck.log" | tr '\n' ' ')"
  [ $rc -eq 0 ] || status=1
  # The API errors by call, to show they are only the provoked ones.
  KILN_BACKEND=cuda compute-sanitizer --tool memcheck \
    "$B/tests/conformance/kiln-conformance" 2>&1 |
    grep -E '^========= Program hit' | sort | uniq -c | tee -a "$OUT/memcheck.log"
}

examples() {
  step examples
  # HIP runs through the test-only HIP-on-CUDA shim: there is no AMD GPU.
  shim=$(find "$B/tests/hip" -name 'libkiln-hip-shim.so' | head -n 1)
  # rawkernel runs twice per backend: the first compiles its kernel from
  # source, the second takes it from the disk cache.
  local cache
  cache=$(mktemp -d)
  for be in cuda vulkan hip; do
    { echo "== KILN_BACKEND=$be"
      KILN_BACKEND=$be KILN_HIP_LIBRARY=$shim "$B/examples/saxpy/saxpy" || status=1
      for _ in 1 2; do
        KILN_BACKEND=$be KILN_HIP_LIBRARY=$shim KILN_CACHE_DIR=$cache \
          "$B/examples/rawkernel/rawkernel" || status=1
      done
    } >> "$OUT/examples.txt" 2>&1
  done
  rm -rf "$cache"
  grep -E '^== |PASS|FAIL|built in|compiler' "$OUT/examples.txt"
}

mpi() {
  # examples/mpi-heat at the issue's size, 2 ranks on the one GPU, on every
  # backend (HIP through the shim), then a small run under compute-sanitizer.
  # Needs OpenMPI unpacked from .gpu (docs/mpi.md lists the packages).
  step mpi
  local heat=$B/examples/mpi-heat/mpi-heat
  if [ ! -x "$heat" ]; then
    echo "SKIPPED: mpi-heat was not built: meson found no MPI (see docs/mpi.md)"
    status=1
    return 0
  fi
  shim=$(find "$B/tests/hip" -name 'libkiln-hip-shim.so' | head -n 1)
  local run=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
             KILN_HIP_LIBRARY="$shim" mpirun --oversubscribe -n 2)
  for be in cuda vulkan hip; do
    { echo "== KILN_BACKEND=$be"
      KILN_BACKEND=$be "${run[@]}" "$heat" 8192 8192 "${KILN_MPI_STEPS:-200}" ||
        status=1
    } >> "$OUT/mpi.txt" 2>&1
  done
  { echo "== KILN_BACKEND=cuda --host-staging"
    KILN_BACKEND=cuda "${run[@]}" "$heat" --host-staging 8192 8192 \
      "${KILN_MPI_STEPS:-200}" || status=1
    echo "== KILN_BACKEND=cuda under compute-sanitizer"
    KILN_BACKEND=cuda "${run[@]}" compute-sanitizer --tool memcheck \
      --error-exitcode 3 "$heat" 512 512 20 || status=1
  } >> "$OUT/mpi.txt" 2>&1
  grep -E '^== |ms per step|PASS|FAIL|ERROR SUMMARY' "$OUT/mpi.txt"
}

ci_build() {
  # Binaries built on the CI machine (no GPU, nvcc only) and carried here.
  step ci-build
  [ -d .gpu-ci ] || { echo "no .gpu-ci carried"; return 0; }
  for be in cuda vulkan; do
    { echo "== ci-built, KILN_BACKEND=$be"
      .gpu-ci/tools/kiln-info
      KILN_BACKEND=$be KILN_VULKAN_VALIDATION=1 .gpu-ci/tests/conformance/kiln-conformance || status=1
      KILN_BACKEND=$be .gpu-ci/examples/saxpy/saxpy || status=1
    } >> "$OUT/ci-build.txt" 2>&1
  done
  grep -E '^== |\[  (PASSED|FAILED)  \]|PASS|FAIL' "$OUT/ci-build.txt"
}

endurance() {
  # Full kiln-endurance runs (not --quick): growth of resident memory,
  # open files and the context's pool (10^6 stream-ordered pairs among
  # the work) from warm-up to end, on every backend; HIP through the shim.
  step endurance
  shim=$(find "$B/tests/hip" -name 'libkiln-hip-shim.so' | head -n 1)
  for be in cuda vulkan hip; do
    KILN_BACKEND=$be KILN_HIP_LIBRARY=$shim "$B/tools/endurance/kiln-endurance" \
      > "$OUT/endurance-$be.txt" 2>&1 || status=1
    echo "-- $be"; tail -n 12 "$OUT/endurance-$be.txt"
  done
}

bench() {
  # A release build: the figures in docs/performance.md come from this step.
  # KILN_BENCH_BACKENDS picks the backends. HIP runs through the shim,
  # built with the tests, so its figures are kiln's and the shim's cost
  # together.
  step bench
  local rb=${B}-release backends_run=${KILN_BENCH_BACKENDS:-cuda vulkan}
  local tests=false
  [[ " $backends_run " == *" hip "* ]] && tests=true
  { meson setup "$rb" --buildtype=release "${backends[@]}" \
      -Dtests=$tests -Dexamples=false &&
    ninja -C "$rb"; } > "$OUT/bench-build.log" 2>&1 || { tail -30 "$OUT/bench-build.log"; return 1; }
  for be in $backends_run; do
    KILN_HIP_LIBRARY=$rb/tests/hip/shim/libkiln-hip-shim.so \
    KILN_BACKEND=$be "$rb/tools/bench/kiln-bench" --json ${KILN_BENCH_ARGS:-} \
      > "$OUT/bench-$be.jsonl" 2> "$OUT/bench-$be.txt" || status=1
    tail -n 40 "$OUT/bench-$be.txt"
  done
}

mutants() {
  # Each mutant's runs find the shim in the mutants' own build.
  step mutants
  # shellcheck disable=SC2086 # KILN_MUTANTS is a list of names
  scripts/mutants.sh --where gpu --tree --work "$B-mutants" \
    --meson-args "${backends[*]} -Dexamples=false -Dtools=false" \
    ${KILN_MUTANTS:-} > "$OUT/mutants.txt" 2>&1 || status=1
  # Each run's log, the unmutated ones too: a run that fails without a
  # mutant is judged from them.
  rm -rf "$OUT/mutants-logs"
  cp -r "$B-mutants/logs" "$OUT/mutants-logs" 2>/dev/null || true
  if grep -q '^MUTANT ' "$OUT/mutants.txt"; then
    sed -n '/^MUTANT /,$p' "$OUT/mutants.txt"
  else
    tail -n 30 "$OUT/mutants.txt"
  fi
}

[ $# -eq 0 ] && set -- all
for what in "$@"; do
  case $what in
    build) build || exit 1 ;;
    test) tests ;;
    conformance) conformance_main; conformance_threads ;;
    conformance-main) conformance_main ;;
    conformance-threads) conformance_threads ;;
    conformance-reorder) conformance_reorder ;;
    conformance-groups) conformance_groups ;;
    nsys) nsys_trace ;;
    sanitize) sanitize ;;
    examples) examples ;;
    mpi) mpi ;;
    ci-build) ci_build ;;
    bench) bench ;;
    endurance) endurance ;;
    mutants) mutants ;;
    all) build || exit 1; tests; conformance_main; conformance_threads
         examples; mpi; ci_build; sanitize ;;
    *) echo "unknown step $what"; exit 2 ;;
  esac
done
exit $status
