# The two commands a newcomer needs: `make run` and `make test`.
# Everything else here is what they are made of.

JOBS ?= $(shell nproc)
# Tests at once: one more than the CPUs. Many tests spend part of their time
# waiting (a daemon's keepalive, a sleeping child, a daemon starting), and a
# core then idles: the ASan integration tests left 23% of the CPU idle with 2
# at once on 2 cores, 10% with 3, and took 0.82x the time.
TEST_JOBS ?= $(shell echo $$(( $$(nproc) + 1 )))
KJITD_ARGS ?=
# What the sanitizer and fuzz builds build: only what their tests run.
ASAN_TARGETS = kjitd kjit kjit_integration_tests kjit_load_driver
FUZZ_TARGETS = kjit_fuzz_targets

# Each install, configure, build and test group runs as a stage of
# scripts/timed-stage.sh: a start line and `stage NAME: N s (exit S)` on
# stderr, and a row in build/stage-times.tsv (KJIT_STAGE_TIMES), so every log
# shows what each stage cost. `make test` starts that table afresh and prints
# it at the end (unless it runs as a stage of something else, such as
# .ci/run, which then owns the table).
STAGE = @scripts/timed-stage.sh
# Set under make -n/-q/-t, where `make test` prints no table.
dry_run = $(findstring n,$(firstword -$(MAKEFLAGS)))$(findstring q,$(firstword -$(MAKEFLAGS)))$(findstring t,$(firstword -$(MAKEFLAGS)))

.PHONY: all deps configure build idle-builds run test test-default test-asan test-fuzz test-python test-load test-container test-gpu bench docs-reference format clean

all: build

deps:
	$(STAGE) deps -- scripts/install-deps.sh

build/build.ninja:
	$(STAGE) configure -- cmake --preset default

configure: deps build/build.ninja

build: configure
	$(STAGE) build -- cmake --build build -j $(JOBS)

# Starts kjitd in the foreground on embedded defaults (unix socket under
# $XDG_RUNTIME_DIR/kjit or /tmp/kjit-$UID). Pass flags with KJITD_ARGS="...".
run: build
	build/bin/kjitd $(KJITD_ARGS)

# Every test: unit and integration tests in the default build, then the
# Python client against the daemon, the load and fault tests (tests/load,
# about a minute), the integration tests and the load and fault tests again
# under AddressSanitizer + UBSan, then the fuzzers. Made by a second make, so
# that the table of stage times prints also when one of them fails (then
# make test fails with that make's status).
test:
	@[ -n "$$KJIT_STAGE_PARENT" ] || scripts/timed-stage.sh --reset
	+@status=0; $(MAKE) --no-print-directory build idle-builds test-default test-python test-load test-asan test-fuzz \
	  || status=$$?; $(if $(dry_run),,scripts/timed-stage.sh --summary;) exit $$status

# The ASan and fuzz builds, started in the background at idle CPU priority
# once the default build is done (scripts/idle-builds.sh): they take only
# the CPU the default tests leave idle; test-asan and test-fuzz wait for
# them and build what is left.
idle-builds: build build-asan/build.ninja build-fuzz/build.ninja
	@scripts/idle-builds.sh start $(JOBS) build-asan "$(ASAN_TARGETS)" build-fuzz "$(FUZZ_TARGETS)"

test-default: build
	$(STAGE) test-default -- ctest --preset default -j $(TEST_JOBS) -LE 'gpu|load'

# The Python client (client/python) against build/bin/kjitd, from a virtual
# environment in build/python-venv (reinstalled only when it changed).
test-python: build
	$(STAGE) test-python -- sh -c 'client/python/run-tests.sh && tests/docs/run_examples.py --lang python'

# The load and fault scenarios (tests/load/run.py, label "load"): real kjitd
# processes under mixed load, a worker, the daemon and Redis killed midway, a
# full disk. A few minutes, run alone; the figures go to build/load-report.json.
test-load: build
	$(STAGE) test-load -- env KJIT_LOAD_TESTS=1 ctest --preset default -L load --output-on-failure

build-asan/build.ninja:
	$(STAGE) configure-asan -- cmake --preset asan

# The integration tests, then the load and fault scenarios (alone: they
# sample memory and kill processes) against the ASan kjitd, its workers, kjit
# and the load driver. run.py finds ASan in the binary: memory bounds that
# allow for it, a shorter load phase, every correctness check, and any
# sanitizer report in a daemon's log or a non-zero exit on SIGTERM a failure.
test-asan: deps build-asan/build.ninja
	$(STAGE) build-asan -- sh -c 'scripts/idle-builds.sh wait build-asan && \
	  cmake --build build-asan -j $(JOBS) --target $(ASAN_TARGETS)'
	$(STAGE) test-asan -- sh -c 'ctest --preset asan -j $(TEST_JOBS) -L integration && KJIT_LOAD_TESTS=1 ctest --preset asan -L load'

build-fuzz/build.ninja:
	$(STAGE) configure-fuzz -- cmake --preset fuzz

# The libFuzzer targets (tests/fuzz, clang-19), each for about 20 s from its
# committed corpus, which holds every crash found so far. Only the targets
# and what they link are built. `ctest --preset fuzz` replays the corpora alone.
test-fuzz: deps build-fuzz/build.ninja
	$(STAGE) build-fuzz -- sh -c 'scripts/idle-builds.sh wait build-fuzz && \
	  cmake --build build-fuzz -j $(JOBS) --target $(FUZZ_TARGETS)'
	$(STAGE) test-fuzz -- tests/fuzz/run.sh build-fuzz

# The container image end to end with podman (rootful; installs podman and
# makes a local debian:12 base once), from the binaries built here.
test-container: build
	$(STAGE) test-container -- scripts/container-test.sh

# Device tests (tests/gpu): need an NVIDIA GPU and driver; they skip without.
test-gpu: build
	$(STAGE) test-gpu -- ctest --preset default -L gpu --output-on-failure

bench: build
	bench/run.sh

# The references generated from the code (docs/configuration-reference.md,
# docs/metrics-reference.md, docs/cli-reference.md); ctest's docs_references
# fails until they are regenerated after a key, metric or flag changes.
docs-reference: build
	python3 scripts/generate_references.py

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf build build-asan build-fuzz
