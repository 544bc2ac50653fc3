#!/usr/bin/env bash
# The fuzz targets under fuzz/, built with clang-14, ASan and UBSan (scripts/sanitizer_build.sh).
#
#   scripts/fuzz.sh                    builds every target and runs each for FUZZ_SECONDS (default 60),
#                                      one line per target; exits 1 if any crashed
#   scripts/fuzz.sh --build [NAME...]  builds the named targets (default: all)
#   scripts/fuzz.sh --run NAME [SECS]  runs one target from its seed corpus
#   scripts/fuzz.sh --runs NAME N      runs one target for N executions (the figures in docs/)
#
# A run works on a copy of fuzz/corpus/NAME, so the seeds in the repository stay as they are; a crashing
# input is kept under $FUZZ_ARTIFACTS (default build-fuzz/artifacts/).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sanitizer_build.sh
BUILD_DIR=$SANITIZER_BUILD
SECONDS_EACH=${FUZZ_SECONDS:-60}
ARTIFACTS=${FUZZ_ARTIFACTS:-$BUILD_DIR/artifacts}

all_targets() {
  sed -n 's/^distflow_fuzz_target(\([a-z0-9_]*\).*/\1/p' fuzz/CMakeLists.txt
}

build() {
  configure_sanitizer_build
  local targets=()
  for name in "$@"; do targets+=("fuzz_$name"); done
  [ ${#targets[@]} -eq 0 ] && targets=(fuzzers)
  cmake --build "$BUILD_DIR" --target "${targets[@]}" -j "$(nproc)"
}

# run NAME -max_total_time=S | -runs=N: prints "NAME: E executions, C crashes" and returns C.
run() {
  local name=$1 limit=$2
  local work log
  work=$(mktemp -d)
  log="$work/log"
  mkdir -p "$work/corpus" "$ARTIFACTS"
  cp -r "fuzz/corpus/$name/." "$work/corpus/" 2>/dev/null || true
  local status=0
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
    LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp \
    "$BUILD_DIR/fuzz/fuzz_$name" "$limit" -rss_limit_mb=4096 -timeout=25 -print_final_stats=1 \
    -artifact_prefix="$ARTIFACTS/$name-" "$work/corpus" >"$log" 2>&1 || status=$?
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  local crashes=0
  if [ "$status" -ne 0 ]; then
    crashes=1
    grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -5 >&2 || true
  fi
  echo "$name: ${execs:-0} executions, $crashes crashes"
  rm -rf "$work"
  return "$crashes"
}

case "${1:-}" in
  --build) shift; build "$@" ;;
  --run) run "$2" "-max_total_time=${3:-$SECONDS_EACH}" ;;
  --runs) run "$2" "-runs=$3" ;;
  "")
    build
    failed=0
    for name in $(all_targets); do
      run "$name" "-max_total_time=$SECONDS_EACH" || failed=1
    done
    exit "$failed" ;;
  *) echo "usage: scripts/fuzz.sh [--build NAME... | --run NAME [SECS] | --runs NAME N]" >&2; exit 2 ;;
esac
