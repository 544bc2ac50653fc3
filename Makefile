# distflow: top-level commands. `make test` installs missing Debian packages, configures, builds and
# runs every test; `make demo` trains Fashion-MNIST on a local cluster (scripts/demo.sh); `make bench`
# runs the benchmarks; `make sanitize` runs the unit tests under ASan and UBSan; `make fuzz` runs every
# fuzz target for FUZZ_SECONDS (default 60).
BUILD ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)

.PHONY: all deps configure build test demo bench format clean sanitize fuzz chaos

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

sanitize:
	@scripts/sanitize.sh

FUZZ_SECONDS ?= 60
fuzz:
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh

# Chaos against a Fashion-MNIST cluster of 2 ps and 2 workers (tools/chaos.py): seeded rounds of
# kill -9s of random tasks restarted on their ports, then a ps frozen with SIGSTOP and a worker cut off
# from a ps (network namespaces, as root), in each mode; every task must exit 0 and the accuracy stay
# within 1 point of an undisturbed run. CI runs one asynchronous kill round:
# `make chaos CHAOS_ROUNDS=1 CHAOS_MODES=async CHAOS_SCENARIOS=kill`.
CHAOS_ROUNDS ?= 10
CHAOS_SEED ?= 1
CHAOS_MODES ?= async,sync
CHAOS_SCENARIOS ?= kill freeze partition
chaos: build
	@set -e; for scenario in $(CHAOS_SCENARIOS); do \
	  rounds=$(CHAOS_ROUNDS); [ $$scenario = kill ] || rounds=1; \
	  /usr/bin/python3 tools/chaos.py --binary $(BUILD)/bin/fashion_mnist --modes $(CHAOS_MODES) \
	    --scenario $$scenario --rounds $$rounds --seed $(CHAOS_SEED); \
	done

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	@rm -rf $(BUILD) build-fuzz

# Installs headers, libraries, the package config and the tools under PREFIX.
PREFIX ?= /usr/local
.PHONY: install
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)
