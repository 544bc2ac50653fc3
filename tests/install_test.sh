#!/usr/bin/env bash
# Installs distflow from a build tree into a temporary prefix, then configures, builds and runs a
# program outside the source tree (install_consumer/) that finds distflow with find_package and
# nothing else: the way a user's project uses an installed distflow.
#
# usage: install_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail

source_dir=$(cd "$1" && pwd)
build_dir=$(cd "$2" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/distflow_install_test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

fail() {
  echo "install_test: $*" >&2
  exit 1
}

cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log" ||
  { cat "$work/install.log" >&2; fail "cmake --install $build_dir failed"; }

config_dir=$prefix/lib/cmake/distflow
[ -f "$config_dir/distflowConfig.cmake" ] || fail "no distflowConfig.cmake under $config_dir"
[ -f "$prefix/include/distflow/distflow.h" ] || fail "the public headers were not installed"
# The `distflow` command is installed where it is built (the tools may not be part of this tree).
if [ -x "$build_dir/bin/distflow" ]; then
  [ -x "$prefix/bin/distflow" ] || fail "build/bin/distflow exists but was not installed to $prefix/bin"
  "$prefix/bin/distflow" --help >/dev/null || fail "the installed $prefix/bin/distflow --help failed"
fi
# The installed package must stand on its own: no path into the source or the build tree.
if grep -rlF -e "$source_dir" -e "$build_dir" "$config_dir"; then
  fail "the installed package config above refers to the source or build tree"
fi

# The consumer is copied out of the source tree, so that nothing it sees points back into it.
cp -r "$source_dir/tests/install_consumer" "$work/consumer"
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths under the temporary directory differ on every run; relative ones let the cache hit.
  export CCACHE_BASEDIR=$work
fi
generator=()
if command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
cmake -S "$work/consumer" -B "$work/consumer/build" "${generator[@]}" "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log" >&2; fail "configuring the consumer against $prefix failed"; }
found=$(sed -n 's/^distflow_DIR:PATH=//p' "$work/consumer/build/CMakeCache.txt")
[ "$found" = "$config_dir" ] || fail "find_package(distflow) found '$found', not $config_dir"
cmake --build "$work/consumer/build" -j 2 >"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; fail "building the consumer against $prefix failed"; }

output=$("$work/consumer/build/consumer") || fail "the consumer failed: $output"
expected=$'local: [[20]]\ngrpc: [[20]]'
[ "$output" = "$expected" ] || fail "the consumer printed '$output', expected '$expected'"
echo "install_test: a program built against $prefix alone printed the product"
