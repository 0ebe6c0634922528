# Quick start: `make demo`, `make test`. Wraps CMake; binaries land in build/bin/.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps configure build demo test sanitize clean
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

# ASan+UBSan and TSan builds of their own, and the tests labelled "sanitize".
sanitize: deps
	@bash scripts/sanitize.sh

clean:
	rm -rf $(BUILD) build-asan build-tsan
