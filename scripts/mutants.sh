#!/usr/bin/env bash
# Mutation testing: applies each one-line bug kept in tests/mutants/*.patch
# to a scratch copy of the committed tree (HEAD, never the working tree;
# where there is no git checkout, a copy of the files),
# rebuilds incrementally and runs the runs its header names. A mutant is
# CAUGHT when one of them fails or times out, and SURVIVED when all pass.
# Before any mutant, the unmutated build must pass the same runs: a run
# that fails without a bug cannot say that it caught one. docs/testing.md
# describes the patches' header and how to add one.
#
# usage: scripts/mutants.sh [--where ci|gpu] [--build DIR] [--work DIR]
#                           [--meson-args 'ARGS'] [--timeout S] [--list]
#                           [--tree] [NAME...]
#   --where      only the mutants caught in CI (lavapipe) or on a GPU machine
#   NAME...      only these mutants (the Mutant: names or the file names)
#   --work       the scratch copy's root (default /tmp/kiln-mutants); its
#                src/ is kept between runs, changed files only, so that
#                the build stays incremental
#   --build      the meson build directory (default WORK/build), configured
#                once and reused for every mutant
#   --meson-args options for meson setup besides -Dwerror=true (default:
#                a Vulkan-only build for --where ci, every backend with the
#                HIP-on-CUDA shim for --where gpu)
#   --timeout    seconds each run may take before it is killed (default 120)
#   --list       print the selected mutants and exit
#   --tree       copy the files as they are, not HEAD: for a copy of the
#                working tree whose git state is not this checkout's (on
#                the GPU machine, HEAD there gave an older tree, and five
#                patches did not apply)
# Exits 0 only when every selected mutant was caught; otherwise names each
# survivor, each patch that no longer applies or builds, and each run that
# fails without a mutant.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
where='' work=/tmp/kiln-mutants build='' meson_args='' limit=120 list=false
tree=false
names=()
while (($#)); do
  case $1 in
    --where) where=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --meson-args) meson_args=$2; shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    --list) list=true; shift ;;
    --tree) tree=true; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
               exit 0 ;;
    -*) echo "mutants.sh: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
case $where in
  ''|ci|gpu) ;;
  *) echo "mutants.sh: --where takes ci or gpu, not '$where'" >&2; exit 2 ;;
esac
if [[ -z $meson_args ]]; then
  if [[ $where == gpu ]]; then
    meson_args='-Dcuda=enabled -Dhip=enabled -Dvulkan=enabled -Dhip-platform=nvidia -Dexamples=false -Dtools=false'
  else
    meson_args='-Dcuda=disabled -Dhip=disabled -Dvulkan=enabled -Dexamples=false -Dtools=false'
  fi
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
build=${build:-$work/build}

# ---- The mutants and their headers ------------------------------------------

# header FILE KEY: the values of "KEY: value" lines before the diff.
header() {
  sed -n '/^diff --git /q; s/^'"$2"': *//p' "$1" | sed 's/[[:space:]]*$//'
}

declare -A m_file=() m_where=() m_backend=() m_runs=() named=()
selected=()
bad=() # mutants that are not judged, each with why
for f in "$repo"/tests/mutants/*.patch; do
  [[ -e $f ]] || continue
  name=$(header "$f" Mutant)
  base=${f##*/}
  if [[ -z $name || $(header "$f" Where) != @(ci|gpu) ||
        $(header "$f" Backend) != @(core|vulkan|cuda|hip) ||
        -z $(header "$f" Run) || -z $(header "$f" Why) ]]; then
    bad+=("$base: its header needs Mutant:, Where: ci|gpu, Backend: core|vulkan|cuda|hip, Run: and Why:")
    continue
  fi
  if [[ $base != [0-9][0-9]-"$name".patch ]]; then
    bad+=("$base: the file's name is not NN-$name.patch")
    continue
  fi
  if ((${#names[@]})); then
    keep=false
    for n in "${names[@]}"; do
      if [[ $n == "$name" || $n == "$base" || $n == "${base%.patch}" ]]; then
        keep=true
        named[$n]=1
      fi
    done
    $keep || continue
  fi
  [[ -n $where && $(header "$f" Where) != "$where" ]] && continue
  selected+=("$name")
  m_file[$name]=$f
  m_where[$name]=$(header "$f" Where)
  m_backend[$name]=$(header "$f" Backend)
  m_runs[$name]=$(header "$f" Run)
done
for n in "${names[@]}"; do
  [[ -n ${named[$n]:-} ]] || bad+=("$n: no such mutant")
done

if $list; then
  for name in "${selected[@]}"; do
    printf '%-44s %-4s %-7s %s\n' "$name" "${m_where[$name]}" \
      "${m_backend[$name]}" "$(header "${m_file[$name]}" Why)"
    while IFS= read -r run; do printf '%58s run: %s\n' '' "$run"; done \
      <<< "${m_runs[$name]}"
  done
  ((${#bad[@]} == 0)) || { printf '%s\n' "${bad[@]}" >&2; exit 1; }
  exit 0
fi
if ((${#selected[@]} == 0)); then
  echo "mutants.sh: no mutant selected" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi

# ---- The scratch copy --------------------------------------------------------

src=$work/src head=$work/head logs=$work/logs
rm -rf "$head" "$logs"
mkdir -p "$src" "$head" "$logs"
if ! $tree && git -C "$repo" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  git -C "$repo" archive HEAD | tar -x -C "$head"
else
  # A copy without git (the GPU machine's): its files as they are, but
  # for the folders that builds and gpu-verify.sh's packages live in.
  tar -c -C "$repo" --exclude=./build --exclude=./.gpu --exclude=./.gpu-ci \
    --exclude="./${work#"$repo"/}" . | tar -x -C "$head"
fi || { echo "mutants.sh: copying the tree failed" >&2; exit 2; }
# src takes head's content file by file, changed files only: the others keep
# their times, so that ninja rebuilds only what changed since the last run.
python3 - "$head" "$src" <<'EOF' || exit 2
import filecmp, os, shutil, sys
head, src = sys.argv[1:]
want = set()
for d, _, files in os.walk(head):
    for f in files:
        rel = os.path.relpath(os.path.join(d, f), head)
        want.add(rel)
        s = os.path.join(src, rel)
        if not os.path.isfile(s) or not filecmp.cmp(s, os.path.join(head, rel), shallow=False):
            os.makedirs(os.path.dirname(s), exist_ok=True)
            shutil.copyfile(os.path.join(head, rel), s)
            shutil.copymode(os.path.join(head, rel), s)
for d, _, files in os.walk(src):
    for f in files:
        p = os.path.join(d, f)
        if os.path.relpath(p, src) not in want:
            os.remove(p)
EOF

# git apply outside a repository: it must not find one above the copy.
apply() { (cd "$src" && GIT_CEILING_DIRECTORIES=$work git apply "$@"); }

# compile LOG: an incremental build; fails when it does.
compile() { meson compile -C "$build" > "$1" 2>&1; }

read -r -a setup_args <<< "$meson_args"
echo "== meson setup $build: -Dwerror=true ${setup_args[*]}"
if [[ -f $build/build.ninja ]]; then
  meson setup --reconfigure "$build" "$src" -Dwerror=true "${setup_args[@]}" \
    > "$logs/setup.log" 2>&1
else
  meson setup "$build" "$src" -Dwerror=true "${setup_args[@]}" \
    > "$logs/setup.log" 2>&1
fi || { tail -30 "$logs/setup.log"; exit 2; }
started=$SECONDS
echo "== building the unmutated tree"
compile "$logs/unmutated-build.log" || {
  tail -40 "$logs/unmutated-build.log"
  echo "mutants.sh: the unmutated tree does not build" >&2
  exit 2
}
shim=$(find "$build/tests/hip" -name 'libkiln-hip-shim.so' 2>/dev/null | head -n 1)
# The sources this build compiles, relative to src: a mutant of another
# file (a backend left out) cannot be judged here.
declare -A compiled=()
while IFS= read -r p; do compiled[$p]=1; done < <(python3 - "$build" "$src" <<'EOF'
import json, os, sys
build, src = map(os.path.realpath, sys.argv[1:])
for c in json.load(open(os.path.join(build, "compile_commands.json"))):
    f = os.path.realpath(os.path.join(c["directory"], c["file"]))
    if f.startswith(src + os.sep):
        print(os.path.relpath(f, src))
EOF
)

# run_one BACKEND RUN LOG: one run of a Run: line, killed after $limit
# seconds; its exit status (124 or 137 when killed). cmocka aborts at the
# first failure: one is enough, and what fails after it may hang.
export CMOCKA_TEST_ABORT=1
run_one() {
  local backend=$1 line=$2 log=$3 words=() envs=() cache
  mapfile -d '' -t words < <(python3 -c 'import shlex, sys
sys.stdout.write("\0".join(shlex.split(sys.argv[1])))' "$line")
  local kind=${words[0]:-}
  words=("${words[@]:1}")
  # Each run has a disk cache of its own: one mutant's entries must not
  # feed another's run.
  cache=$(mktemp -d "$work/cache.XXXXXX")
  case $kind in
    conformance)
      envs=(KILN_BACKEND="$([[ $backend == core ]] && echo vulkan || echo "$backend")"
            KILN_CACHE_DIR="$cache" "${words[@]}")
      [[ -n $shim && -z ${KILN_HIP_LIBRARY:-} ]] && envs=(KILN_HIP_LIBRARY="$shim" "${envs[@]}")
      env "${envs[@]}" timeout -k 10 "$limit" \
        "$build/tests/conformance/kiln-conformance" > "$log" 2>&1 ;;
    core)
      local exe=${words[0]:-} && words=("${words[@]:1}")
      env KILN_LOG= KILN_CACHE_DIR="$cache" "${words[@]}" timeout -k 10 "$limit" \
        "$build/tests/core/core-$exe" > "$log" 2>&1 ;;
    meson)
      timeout -k 10 "$limit" meson test -C "$build" --no-rebuild \
        --print-errorlogs "${words[@]}" > "$log" 2>&1 ;;
    *) echo "mutants.sh: Run: '$line' is not conformance, core or meson" > "$log"
       rm -rf "$cache"; return 2 ;;
  esac
  local rc=$?
  rm -rf "$cache"
  return $rc
}

# ---- The unmutated runs --------------------------------------------------------

declare -A base_rc=() # "backend|run" -> exit status without a mutant
i=0
for name in "${selected[@]}"; do
  while IFS= read -r run; do
    key="${m_backend[$name]}|$run"
    [[ -n ${base_rc[$key]:-} ]] && continue
    i=$((i + 1))
    t=$SECONDS
    run_one "${m_backend[$name]}" "$run" "$logs/unmutated-$i.log"
    base_rc[$key]=$?
    printf '== unmutated: %-60s rc=%s (%ds, log %s)\n' "$run" \
      "${base_rc[$key]}" $((SECONDS - t)) "$logs/unmutated-$i.log"
  done <<< "${m_runs[$name]}"
done

# ---- The mutants -----------------------------------------------------------------

declare -A result=() by=() secs=()
for name in "${selected[@]}"; do
  f=${m_file[$name]}
  t=$SECONDS
  mapfile -t touched < <(apply --numstat "$f" 2>/dev/null | cut -f3)
  if ! apply --check "$f" 2> "$logs/$name-apply.log" || ((${#touched[@]} == 0)); then
    result[$name]=NO-APPLY by[$name]="see $logs/$name-apply.log" secs[$name]=0
    continue
  fi
  for p in "${touched[@]}"; do
    [[ -n ${compiled[$p]:-} ]] && continue
    result[$name]=NOT-BUILT by[$name]="$p is not compiled with: $meson_args"
  done
  if [[ ${result[$name]:-} == NOT-BUILT ]]; then
    secs[$name]=0
    continue
  fi
  unjudged=
  while IFS= read -r run; do
    rc=${base_rc[${m_backend[$name]}|$run]}
    if [[ $rc == 77 ]]; then
      unjudged+="${unjudged:+; }'$run' skips unmutated (rc=77: it cannot run here)"
    elif [[ $rc != 0 ]]; then
      unjudged+="${unjudged:+; }'$run' fails unmutated (rc=$rc)"
    fi
  done <<< "${m_runs[$name]}"
  if [[ -n $unjudged ]]; then
    result[$name]=UNJUDGED by[$name]=$unjudged secs[$name]=0
    continue
  fi
  apply "$f"
  echo "== $name: building"
  if ! compile "$logs/$name-build.log"; then
    result[$name]=NO-BUILD by[$name]="see $logs/$name-build.log"
  else
    result[$name]=SURVIVED by[$name]="every run passed"
    i=0
    while IFS= read -r run; do
      i=$((i + 1))
      log=$logs/$name-$i.log
      run_one "${m_backend[$name]}" "$run" "$log"
      rc=$?
      echo "   $run: rc=$rc"
      if ((rc != 0)); then
        result[$name]=CAUGHT
        ((rc == 124 || rc == 137)) && by[$name]="$run (timed out)" ||
          by[$name]="$run (rc=$rc)"
        break
      fi
    done <<< "${m_runs[$name]}"
  fi
  # Restored from the pristine copy, with a new time so that ninja rebuilds.
  for p in "${touched[@]}"; do cp "$head/$p" "$src/$p"; done
  secs[$name]=$((SECONDS - t))
  echo "   ${result[$name]} (${secs[$name]} s)"
done

# ---- Report ----------------------------------------------------------------------

echo
printf '%-44s %-5s %-9s %6s  %s\n' MUTANT WHERE RESULT SECONDS 'CAUGHT BY / WHY NOT'
failed=()
for name in "${selected[@]}"; do
  printf '%-44s %-5s %-9s %6s  %s\n' "$name" "${m_where[$name]}" \
    "${result[$name]}" "${secs[$name]}" "${by[$name]}"
  [[ ${result[$name]} == CAUGHT ]] || failed+=("$name: ${result[$name]} ${by[$name]}")
done
failed+=("${bad[@]}")
echo "mutants.sh: ${#selected[@]} mutant(s) in $((SECONDS - started)) s; logs in $logs"
if ((${#failed[@]})); then
  echo "mutants.sh: FAILED: not every mutant was caught:" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "mutants.sh: every mutant was caught"
