#!/usr/bin/env bash
# Checks that a build's libkiln.so.0 keeps the ABI of the committed baseline
# (abi/libkiln.so.0.abi, written by libabigail's abidw):
#   1. every KILN_API function of kiln.h is in kiln.map (the linker's
#      version script), and every symbol the library exports carries a
#      KILN_* version;
#   2. abidiff between the baseline and the library finds no change to a
#      function, a variable or a type that kiln.h defines. Added functions
#      are allowed (they go in a new node of kiln.map). The structs behind
#      kiln's opaque handles are not part of the ABI (abi/kiln.abignore).
#      Appending a field to a struct that carries its size (struct_size,
#      README "Structs that grow") is allowed by abi/kiln.abignore too.
# Prints the report and exits 1 on a difference, 2 on bad usage or a
# missing tool (abigail-tools).
#
# usage: scripts/abi-check.sh BUILD_DIR            check BUILD_DIR's library
#        scripts/abi-check.sh --update BUILD_DIR   write the baseline from it
#
# Change the baseline only on purpose, in the commit that changes the ABI,
# and only in a way that keeps old programs working, or with a new soname
# (README, "The ABI").
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
baseline=$repo/abi/libkiln.so.0.abi
ignore=$repo/abi/kiln.abignore

update=false
if [[ "${1:-}" == --update ]]; then
  update=true
  shift
fi
if [[ $# -ne 1 ]]; then
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
build=$1
lib=$(find "$build" -maxdepth 1 -name 'libkiln.so.0.*' -type f | head -n 1)
if [[ -z "$lib" ]]; then
  echo "abi-check: no libkiln.so.0.* in $build: build kiln there first" >&2
  exit 2
fi
for tool in abidw abidiff objdump; do
  if ! command -v "$tool" > /dev/null; then
    echo "abi-check: $tool is missing (Debian: apt-get install abigail-tools binutils)" >&2
    exit 2
  fi
done

if $update; then
  abidw --no-corpus-path --out-file "$baseline" "$lib"
  echo "abi-check: wrote $baseline from $lib"
  exit 0
fi

status=0
api=$(grep -oE 'KILN_API [^(]*[ *]kiln_[a-z0-9_]+\(' "$repo/include/kiln/kiln.h" |
      grep -oE 'kiln_[a-z0-9_]+\($' | tr -d '(' | sort -u)
mapped=$(grep -oE '^ +kiln_[a-z0-9_]+;' "$repo/kiln.map" | tr -d ' ;' | sort -u)
missing=$(comm -23 <(echo "$api") <(echo "$mapped"))
if [[ -n "$missing" ]]; then
  echo "abi-check: FAILED: kiln.h declares functions that kiln.map does not export (add them in a new version node):"
  echo "$missing" | sed 's/^/  /'
  status=1
fi
# objdump -T: "... DF .text <size> <version> <name>"; unversioned symbols
# show "Base".
unversioned=$(objdump -T "$lib" | awk '$2 == "g" && $4 == ".text" && $6 !~ /^KILN_/ {print $NF}')
if [[ -n "$unversioned" ]]; then
  echo "abi-check: FAILED: $lib exports functions without a KILN_* version:"
  echo "$unversioned" | sed 's/^/  /'
  status=1
fi
(( status != 0 )) ||
  echo "abi-check: $(echo "$api" | wc -l) functions in kiln.h, each exported with its version"

report=$(mktemp)
trap 'rm -f "$report"' EXIT
rc=0
abidiff --no-added-syms --suppressions "$ignore" "$baseline" "$lib" > "$report" 2>&1 || rc=$?
if (( rc != 0 )); then
  cat "$report"
  if (( rc & 8 )); then
    echo "abi-check: FAILED: $lib breaks the ABI of abi/libkiln.so.0.abi (abidiff exit $rc: incompatible change)"
  elif (( rc & 4 )); then
    echo "abi-check: FAILED: $lib changes the ABI of abi/libkiln.so.0.abi (abidiff exit $rc); if the change keeps old programs working, update the baseline on purpose: scripts/abi-check.sh --update $build"
  else
    echo "abi-check: FAILED: abidiff could not compare (exit $rc)"
  fi
  status=1
else
  echo "abi-check: $lib keeps the ABI of abi/libkiln.so.0.abi"
fi
exit $status
