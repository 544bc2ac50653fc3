#!/usr/bin/env bash
# Installs the Debian packages distflow builds and tests with (and, with --bench, the benchmark
# peers), when any is missing.
# Debian packages only; nothing is downloaded from elsewhere.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libabsl-dev libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libeigen3-dev libopenblas-dev zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev nlohmann-json3-dev libcli11-dev dataset-fashion-mnist
  gnuplot-nox
  # The deployment tests: network namespaces (ip netns), the manifests' YAML, the shell scripts.
  iproute2 python3-yaml shellcheck
)
# Benchmarks also measure their peers (PyTorch, run by Debian's /usr/bin/python3).
if [ "${1:-}" = "--bench" ]; then
  packages+=(python3-torch python3-numpy)
fi
# The sanitizer build and the fuzz targets (make sanitize, make fuzz): clang with its runtimes and libFuzzer.
if [ "${1:-}" = "--sanitize" ]; then
  packages+=(clang-14 libclang-rt-14-dev libfuzzer-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install_deps: installing missing Debian packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install_deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
