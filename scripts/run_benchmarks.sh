#!/usr/bin/env bash
# Runs every benchmark binary under BUILD/bench (each measures distflow against a peer in the
# same run and prints the ratio). Usage: scripts/run_benchmarks.sh [BUILD]
set -euo pipefail
build="${1:-build}"
shopt -s nullglob
benches=("$build"/bench/*)
if [ ${#benches[@]} -eq 0 ]; then
  echo "No benchmarks yet: they arrive with the learning and distributed runtime work (see docs/benchmarks.md)."
  exit 0
fi
for b in "${benches[@]}"; do
  # Executables only (the folder also holds CMake's own files and folders).
  [ -f "$b" ] && [ -x "$b" ] || continue
  echo "== $(basename "$b")"
  "$b"
done
