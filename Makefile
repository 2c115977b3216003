# The one list of commands. Every target installs what it needs by itself.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.deps-stamp
SHARED ?= $(abspath ../shared)
export OXBLOSC_SHARED := $(SHARED)
CARGO ?= cargo
# zlib-ng (the inflate of codec 4, decision 0013) is C built by cmake: every target that compiles Rust checks for it.
NEED_CMAKE = @command -v cmake >/dev/null || (apt-get update -qq && apt-get install -y -qq cmake) \
  || { echo "cmake is required to build zlib-ng: apt-get install cmake (or pip install cmake)"; exit 2; }

.PHONY: bundle-cli all demo test test-rust test-python ci lint fmt develop develop-release bench-quick bench bench-nd fuzz fuzz-quick clean stress venv check-shared native-peer

all: test

$(STAMP): pyproject.toml requirements-dev.txt
	@command -v python3 >/dev/null || { echo "python3 is required"; exit 2; }
	@python3 -c 'import venv, ensurepip' 2>/dev/null || (apt-get update -qq && apt-get install -y -qq python3-venv)
	@command -v cargo >/dev/null || { echo "a Rust toolchain (cargo) is required"; exit 2; }
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

## develop: build the extension in the dev profile into the venv (fast to compile)
develop: $(STAMP)
	$(NEED_CMAKE)
	$(VENV)/bin/maturin develop -q --uv 2>/dev/null || $(VENV)/bin/maturin develop -q
	$(CARGO) build -q -p oxblosc-cli -p oxblosc-hdf5 && $(MAKE) -s bundle-cli PROFILE=debug

## develop-release: optimised build for demos and benchmarks
develop-release: $(STAMP)
	$(NEED_CMAKE)
	$(VENV)/bin/maturin develop -q --release --uv 2>/dev/null || $(VENV)/bin/maturin develop -q --release
	$(CARGO) build -q --release -p oxblosc-cli -p oxblosc-hdf5 && $(MAKE) -s bundle-cli PROFILE=release

# The `oxblosc` console script (python/oxblosc/_cli.py) execs the binary bundled here, and
# oxblosc.hdf5 registers the HDF5 filter plugin placed in its PLUGIN_PATH.
# Each file is copied, stripped and renamed into place (a running process may have it mapped).
# HDF5's plugin search takes one filter per library file: the *_blosc1 copy offers Blosc (32001).
PLUGINS := python/oxblosc/hdf5/plugins
bundle-cli:
	mkdir -p python/oxblosc/_bin $(PLUGINS)
	for pair in oxblosc:python/oxblosc/_bin/oxblosc liboxblosc_hdf5.so:$(PLUGINS)/liboxblosc_hdf5.so \
	    liboxblosc_hdf5.so:$(PLUGINS)/liboxblosc_hdf5_blosc1.so; do \
	  src=target/$(PROFILE)/$${pair%%:*}; dst=$${pair#*:}; \
	  cp $$src $$dst.tmp && { strip $$dst.tmp 2>/dev/null || true; } && mv -f $$dst.tmp $$dst || exit 1; \
	done

## demo: compress a real dataset with several codecs/filters and compare with .npy
demo: develop-release
	$(PIP) install -q --no-deps -r bench/demo-requirements.txt
	$(PY) scripts/demo.py

## test: every Rust and Python test
test: check-shared test-rust test-python

# The tests read the C-Blosc2 test vectors kept outside the repository.
check-shared:
	@test -d "$(SHARED)/vectors/c-blosc2-compat" || { \
	  echo "make test needs the shared test data: $(SHARED)/vectors/c-blosc2-compat is missing."; \
	  echo "  It holds the C-Blosc2 compatibility vectors the Rust and Python tests read."; \
	  echo "  Put the shared/ directory beside this repository (../shared), or run: make test SHARED=/path/to/shared"; \
	  exit 2; }

# The frame interop test runs python-blosc2 from the venv (both directions).
test-rust: check-shared $(STAMP)
	$(NEED_CMAKE)
	OXBLOSC_INTEROP_PY=$(abspath $(PY)) $(CARGO) test --workspace --exclude oxblosc-python --quiet
	$(CARGO) test --manifest-path fuzz/Cargo.toml --target-dir target --quiet --test replay_regressions

# Debian's HDF5 tools (h5dump, h5repack) load our filter plugin in python/tests/test_hdf5.py;
# libhdf5-dev builds the C application of python/tests/test_hdf5_c_app.py.
test-python: check-shared develop
	@command -v h5dump >/dev/null || (apt-get update -qq && apt-get install -y -qq hdf5-tools) \
	  || echo "hdf5-tools not installed (no apt?): the HDF5 C-tool test will be skipped"
	@pkg-config --exists hdf5 2>/dev/null || (apt-get update -qq && apt-get install -y -qq libhdf5-dev pkg-config) \
	  || echo "libhdf5-dev not installed (no apt?): the HDF5 C-application test will be skipped"
	$(PY) -m pytest -q python/tests

## ci: what .ci/run calls
ci: lint test

lint: $(STAMP)
	$(NEED_CMAKE)
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --quiet -- -D warnings
	$(VENV)/bin/ruff check python bench scripts build_backend
	$(VENV)/bin/ruff format --check python bench scripts build_backend
	$(PY) scripts/check_layers.py

fmt: $(STAMP)
	$(CARGO) fmt --all
	$(VENV)/bin/ruff format python bench scripts build_backend
	$(VENV)/bin/ruff check --fix python bench scripts build_backend

## bench-quick: side-by-side with python-blosc2, under a minute
bench-quick: develop-release
	$(PIP) install -q --no-deps -r bench/demo-requirements.txt
	$(PY) bench/chunk_bench.py --quick

bench: develop-release
	$(PIP) install -q --no-deps -r bench/demo-requirements.txt
	$(PIP) install -q -r bench/requirements.txt
	$(PY) bench/chunk_bench.py
	$(PY) bench/frame_bench.py
	$(PY) bench/nd_bench.py

## native-peer: python-blosc2's C-Blosc2 timed natively with symbols for perf (crates/oxblosc-chunk/
## examples/c/*.c linked to the wheel's static libblosc2.a), beside the Rust examples they mirror
native-peer: $(STAMP)
	$(NEED_CMAKE)
	@mkdir -p target/native-peer
	B=$$($(PY) -c 'import blosc2, os; print(os.path.dirname(blosc2.__file__))') && \
	  for t in b2_encode_loop b2_decode_loop b2_deflate_speed; do \
	    cc -O2 -g -o target/native-peer/$$t crates/oxblosc-chunk/examples/c/$$t.c -I$$B/include \
	      $$B/lib/libblosc2.a -lpthread -lm -ldl || exit 1; done
	$(CARGO) build -q --release -p oxblosc-chunk --example encode_file --example decode_file --example zlib_deflate_speed
	@echo "built target/native-peer/b2_{encode_loop,decode_loop,deflate_speed} and target/release/examples/{encode_file,decode_file,zlib_deflate_speed}"

## bench-nd: the 4-d slicing benchmark vs python-blosc2, zarr, h5py (ND_ARGS=--quick for a small one)
bench-nd: develop-release
	$(PIP) install -q -r bench/requirements.txt
	$(PY) bench/nd_bench.py $(ND_ARGS)

## bench-multitables: Streamer vs multitables in a NumPy-1 venv (MT_VENV, made on demand; not in CI)
MT_VENV ?= /tmp/oxblosc-np1-venv
.PHONY: bench-multitables
bench-multitables: $(STAMP)
	test -x $(MT_VENV)/bin/python || python3.11 -m venv $(MT_VENV)
	$(MT_VENV)/bin/pip install -q -r bench/multitables-requirements.txt
	rm -rf $(MT_VENV)/wheel && $(VENV)/bin/maturin build -q --release -o $(MT_VENV)/wheel
	$(MT_VENV)/bin/pip install -q --force-reinstall --no-deps $(MT_VENV)/wheel/oxblosc-*.whl
	$(MT_VENV)/bin/python bench/streamer_mt_bench.py $(MT_ARGS)

## fuzz: every fuzz target for FUZZ_SECONDS each (needs cargo-fuzz; installs it)
FUZZ_SECONDS ?= 600
fuzz:
	$(NEED_CMAKE)
	command -v cargo-fuzz >/dev/null || $(CARGO) install -q cargo-fuzz
	for t in decompress roundtrip getitem frame_open frame_ops nd_open nd_slices bloscpack hdf5_decode nd_filters ndlz lz4 zlib zfp_acc zfp_prec zfp_rate; do fuzz/run.sh $$t $(FUZZ_SECONDS) || exit 1; done

## stress: the crash test that SIGKILLs CTable appends, over many seeds (`make ci` runs one); STRESS_SEEDS=N
STRESS_SEEDS ?= 50
stress: develop
	for seed in $$(seq 1 $(STRESS_SEEDS)); do OXBLOSC_CRASH_SEED=$$seed $(PY) -m pytest -q -p no:cacheprovider python/tests/test_ctable_crash.py -k killed || exit 1; done

clean:
	$(CARGO) clean
	rm -rf $(VENV)
