#!/usr/bin/env bash
# `make bench` (scripts/run_benchmarks.sh) runs every executable in <build>/bench and nothing else:
# CMake keeps folders and files of its own there, which must not stop the run.
set -euo pipefail
source_dir="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bench/CMakeFiles"
printf 'not a benchmark\n' > "$tmp/bench/cmake_install.cmake"
for name in a_bench b_bench; do
  printf '#!/bin/sh\necho "ran %s"\n' "$name" > "$tmp/bench/$name"
  chmod +x "$tmp/bench/$name"
done
out=$("$source_dir/scripts/run_benchmarks.sh" "$tmp")
for name in a_bench b_bench; do
  grep -q "ran $name" <<<"$out" || { echo "FAIL: $name did not run; output: $out"; exit 1; }
done
if grep -q "CMakeFiles\|cmake_install" <<<"$out"; then
  echo "FAIL: the script tried to run CMake's files; output: $out"
  exit 1
fi
echo "ok: $out"
