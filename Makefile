# xpfilt: every target sets itself up (creates .venv and installs the package) before running.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
AOT    := $(VENV)/.scanner-aot
export PATH := $(abspath $(BIN)):$(PATH)

# Test tiers (pytest markers in pyproject.toml; each test is in exactly one tier, test-all runs
# them all). Hypothesis draws the examples of the profile XPFILT_HYPOTHESIS names: dev (default),
# ci (.ci/run) or nightly (tests/conftest.py).
PYTEST := $(BIN)/python -m pytest -q
XDIST  := -n auto --dist loadfile

.PHONY: setup demo test test-rtl test-slow test-all lint regress bench bench-synth fuzz clean

setup: $(STAMP) $(AOT)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,sim,spark,synth,eth]'
	touch $(STAMP)

# The fast engine's compiled loop built ahead of time (Numba's pycc and the C compiler): no
# Numba import or compile per run. Without it the loop is compiled on first use and cached.
$(AOT): $(STAMP) xpfilt/software/compiled.py xpfilt/software/compiled_dfa.py xpfilt/software/scanner.py
	$(BIN)/python -m xpfilt.software.compiled >/dev/null || echo "xpfilt: no ahead-of-time scanner; Numba compiles it on first use"
	touch $(AOT)

## demo: filter the shared NITF documents with a shared query set, check against the expected answer
demo: $(STAMP) $(AOT)
	$(BIN)/python -m xpfilt.demo

## test: the quick tier (<= 5 min on 2 cores): unit, compiler, model and software-engine tests,
## the RTL = the model in the Amaranth simulator on fixed small designs (W = 1, 2, 4; custom and
## programmable engines, board core) with random stimulus, one Verilator run per engine kind
test: $(STAMP) $(AOT)
	$(PYTEST) $(XDIST) -m "not regress and not rtl and not slow"

## test-rtl: simulator and synthesis-tool tests: Verilator and Icarus runs (checkers made to
## fail, sparse readouts, W = 4), simulated boards, Yosys and nextpnr, designs elaborated per
## hypothesis example, W = 8 engines, the largest parameter edges (~20 min on 2 cores)
test-rtl: $(STAMP) $(AOT)
	$(PYTEST) $(XDIST) -m "rtl and not regress"

## test-slow: tests that start a Spark JVM (filter, sweeps, sharded regressions; one worker, so
## one JVM) or run a model or compiler over every shared query set
test-slow: $(STAMP) $(AOT)
	$(PYTEST) -m "slow and not rtl and not regress"

## test-all: every tier: test, test-rtl, test-slow, regress and fuzz (hours)
test-all: test test-rtl test-slow regress fuzz

## lint: ruff's lint and format checks, mypy on [tool.mypy] files (pinned in the test extra;
## `ruff format .` fixes the format)
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

## regress: the long regressions (summaries of the cocotb runs are printed: -rP)
regress: $(STAMP) $(AOT)
	$(BIN)/python -m pytest -q -rP -m regress

## fuzz: random and hostile input through every engine, the RTL vs the model (~30 min on 2 cores;
## FUZZ_ARGS="--cases-scale 0.1" for a shorter run); bench/results/fuzz.md, replays in build/fuzz
fuzz: $(STAMP) $(AOT)
	$(BIN)/python -m xpfilt.verify.fuzz $(FUZZ_ARGS)

## bench: software, model, compile-time and simulation benchmarks (hostlink: the simulated
## boards' links, ~30 min cold: the 12,000-query Verilator build); numbers land in bench/results/
bench: $(STAMP) $(AOT)
	cd bench && for script in reference_throughput profile_language wide_front_end_bound software_vs_yfilter model_throughput compile_time cocotb_speed hostlink sweep_speedup spark_filter_speedup; do ../$(BIN)/python $$script.py || exit 1; done

## bench-synth: synthesis and place-and-route benchmarks (Yosys, nextpnr; tens of minutes cold)
bench-synth: $(STAMP)
	cd bench && for script in resources fmax throughput programmable capacity; do ../$(BIN)/python $$script.py || exit 1; done

clean:
	rm -rf $(VENV) build .pytest_cache .hypothesis
