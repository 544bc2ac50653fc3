#!/usr/bin/env bash
# `make sanitize`: builds everything with clang-14, ASan, UBSan and -Wthread-safety (warnings are errors)
# and runs the unit tests (those beside the code; `ctest -L unit`) under the sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sanitizer_build.sh
configure_sanitizer_build
cmake --build "$SANITIZER_BUILD" -j "$(nproc)"
cd "$SANITIZER_BUILD"
# Leaks are reported (detect_leaks); a UBSan finding fails the test (-fno-sanitize-recover).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest -L unit --output-on-failure -j "$(nproc)"
