#!/usr/bin/env bash
# `make sanitize`: builds everything with clang-14, ASan, UBSan and -Wthread-safety (warnings are errors)
# and runs the unit tests (those beside the code; `ctest -L unit`) under the sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/sanitizer_build.sh
configure_sanitizer_build
cmake --build "$SANITIZER_BUILD" --target unit_tests -j "$(nproc)"
# Leaks are reported (detect_leaks; scripts/lsan.supp names the libraries' own); a UBSan finding fails
# the test (-fno-sanitize-recover).
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
export LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp
cd "$SANITIZER_BUILD"
ctest -L unit --output-on-failure -j "$(nproc)"
