# Two commands on a fresh machine:
#   make install bench   set up, then run the main job (the benchmark)
#   make test            run every test that can run on this machine
#
# `make install` makes .venv with the real dependencies (CPU torch when no
# NVIDIA driver is present) and installs this project into it in editable mode.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
HAS_GPU := $(shell test -e /dev/nvidiactl && echo 1)
# On the CPU the Triton kernels run under the interpreter and the Numba ones
# under the simulator; both must be set before triton/numba are imported.
EMU    := TRITON_INTERPRET=1 NUMBA_ENABLE_CUDASIM=1
# With PY pointing elsewhere (a GPU machine's own python3), nothing is installed.
DEPS   := $(if $(filter $(VENV)/bin/python,$(PY)),install,)
BENCH_ARGS ?= --plot
PYTEST_ARGS ?=
# `make test` spreads the tests over this many pytest-xdist processes (1: one process).  The CPU
# suite is one interpreter-bound thread per process: 949 s in one process on 2 cores (113 % CPU).
# More than 4 buys little and costs ~1.5 GB of memory each.
TEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)
# Expanded when the recipe runs, i.e. after `install`: empty where pytest-xdist is missing.
XDIST_ARGS = $(shell [ "$(TEST_JOBS)" -gt 1 ] 2>/dev/null && $(PY) -c "import xdist" 2>/dev/null && echo "-n $(TEST_JOBS)")
TORCH_SPEC ?= torch==2.13.0

.PHONY: install test test-all bench bench-pytest bench-compare lint readme clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
ifeq ($(HAS_GPU),1)
	$(PY) -m pip install -q -e '.[dev]'
else
	# CPU-only machine: install torch first ($(TORCH_SPEC); where a CPU wheel of
	# it is on the local wheel path, pip takes that one instead of the CUDA build).
	$(PY) -m pip install -q '$(TORCH_SPEC)'
	$(PY) -m pip install -q -e '.[dev]'
endif
	touch $(STAMP)

# Everything that runs here: all backends on the GPU if there is one,
# else eager on the CPU + Triton under its interpreter + the CUDA compile checks.
test: $(DEPS)
ifeq ($(HAS_GPU),1)
	$(PY) -m pytest tests -q $(XDIST_ARGS)
else
	$(EMU) $(PY) -m pytest tests -q $(XDIST_ARGS)
endif

# Every backend on the GPU; uses the interpreter nowhere.  Run with the
# system python on the GPU machine: `make test-all PY=python3`.
test-all:
	env -u TRITON_INTERPRET -u NUMBA_ENABLE_CUDASIM $(PY) -m pytest tests -q -rs

bench: $(DEPS)
	$(PY) -m bench $(BENCH_ARGS)

# pytest-benchmark runs (saved under .benchmarks/) and their comparison:
#   make bench-pytest PYTEST_ARGS=--backend=triton ; make bench-compare
#   make bench-compare RUNS="bench/results/a.json bench/results/b.json"
bench-pytest: $(DEPS)
	$(PY) -m pytest bench -q --benchmark-autosave $(PYTEST_ARGS)

bench-compare: $(DEPS)
	$(PY) -m bench.compare $(RUNS)

lint: $(DEPS)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check common tests

readme: $(DEPS)
	$(PY) -m common.capabilities --update README.md

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .benchmarks build *.egg-info
