# tilec — thin wrapper over CMake. `make run`: Release build + the main job; `make test`: build +
# every test through CTest. Build trees live under build/.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE ?= cmake
PREFIX ?= /usr/local

.PHONY: all run test asan tsan install deps release debug clean

all: release

deps:
	@scripts/deps.sh build

build/release/Makefile: deps
	@$(CMAKE) -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null

release: deps
	@$(CMAKE) -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	@$(CMAKE) --build build/release -j $(JOBS)

debug: deps
	@$(CMAKE) -S . -B build/debug -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@$(CMAKE) --build build/debug -j $(JOBS)

# The main job: the roofline table, roofline.csv and roofline.png (gnuplot is installed when
# possible; without it the CSV is still written).
run: release
	@scripts/deps.sh plot || echo "make run: gnuplot unavailable: the plot will be skipped" >&2
	@build/release/tilec roofline

test: release
	@cd build/release && ctest --output-on-failure -j $(JOBS)

# Address + undefined-behaviour sanitizers over the whole suite; stack-use-after-return on too
# (a plan holding a pointer into a returned frame passed the plain build's tests).
asan: deps
	@$(CMAKE) -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DTILEC_SANITIZE=address,undefined >/dev/null
	@$(CMAKE) --build build/asan -j $(JOBS)
	@cd build/asan && ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

# Thread sanitizer over the pool and executor tests.
tsan: deps
	@$(CMAKE) -S . -B build/tsan -DCMAKE_BUILD_TYPE=Debug -DTILEC_SANITIZE=thread >/dev/null
	@$(CMAKE) --build build/tsan -j $(JOBS)
	@cd build/tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j $(JOBS) -R 'runtime_'

install: release
	@$(CMAKE) --install build/release

clean:
	rm -rf build
