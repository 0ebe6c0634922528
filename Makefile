# Quick start: `make demo`, `make test`. Wraps CMake; binaries land in build/bin/.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps configure build demo test clean
all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	$(BUILD)/bin/vksoftmax demo

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD)
