# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: the clang-14 build with ASan, UBSan and libFuzzer
# coverage (DISTFLOW_SANITIZE), in $SANITIZER_BUILD (default build-fuzz). -O1 with line tables keeps the
# build and the runs quick and the reports readable; -Wthread-safety is on, as in every clang build, and
# warnings are errors.
SANITIZER_BUILD=${SANITIZER_BUILD:-build-fuzz}

configure_sanitizer_build() {
  scripts/install_deps.sh --sanitize
  if [ ! -f "$SANITIZER_BUILD/build.ninja" ]; then
    cmake -S . -B "$SANITIZER_BUILD" -G Ninja -DCMAKE_BUILD_TYPE= \
      -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" -DCMAKE_CXX_COMPILER=clang++-14 \
      -DDISTFLOW_SANITIZE=ON >/dev/null
  fi
}
