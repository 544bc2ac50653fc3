# distflow: top-level commands. `make test` installs missing Debian packages, configures, builds and
# runs every test; `make demo` trains Fashion-MNIST on a local cluster (scripts/demo.sh); `make bench`
# runs the benchmarks.
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)

.PHONY: all deps configure build test demo bench format clean

all: build

deps:
	@scripts/install_deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

bench: build
	@scripts/install_deps.sh --bench
	@scripts/run_benchmarks.sh $(BUILD)

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	@rm -rf $(BUILD)

# Installs headers, libraries, the package config and the tools under PREFIX.
PREFIX ?= /usr/local
.PHONY: install
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)
