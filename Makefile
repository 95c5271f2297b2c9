# Quick start: `make demo` (evaluate agents on the bundled demo scenes) and `make test`.
# Both set up what they need on a fresh machine: a virtualenv in .venv, the pip packages,
# and the Debian EGL libraries for headless rendering.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install -q
TORCH_SPEC ?= torch==2.14.1 torchvision==0.29.1
DEMO_OUT ?= demo_output
PYTEST_ARGS ?=

.PHONY: setup setup-baselines egl chromium habitat-sim demo baselines test test-fast bench bench-agreement clean

$(VENV)/.base-installed: pyproject.toml _build/mosnav_build.py
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip wheel setuptools
	$(PIP) -e .[test]
	touch $@

$(VENV)/.baselines-installed: $(VENV)/.base-installed
	$(PIP) $(TORCH_SPEC)
	$(PIP) -e .[test,baselines]
	touch $@

egl:
	@bash scripts/ensure_egl.sh

# The report page test renders index.html in a real headless browser.
chromium:
	@bash scripts/ensure_chromium.sh

# habitat-sim for the tests that compare both simulators, when ../shared/wheels has a build
# of it (CI); elsewhere those tests skip. Users install habitat-sim from conda (README).
habitat-sim: $(VENV)/.base-installed
	@bash scripts/ensure_habitat_sim.sh $(VENV)

setup: $(VENV)/.base-installed egl

setup-baselines: $(VENV)/.baselines-installed egl

# The demo/official benchmark setting (12 MOS + MOC episodes of the bundled scenes), then
# a report page comparing the two runs: $(DEMO_OUT)/report/index.html (each episode's map
# of both agents side by side, the oracle's videos linked).
demo: setup
	rm -rf $(DEMO_OUT)
	$(VENV)/bin/mosnav-eval --benchmark demo/official --agent habitat_mosnav.agents.oracle:OracleAgent \
		--save-maps --save-video mp4 --output-dir $(DEMO_OUT)/oracle
	$(VENV)/bin/mosnav-eval --benchmark demo/official --agent random --save-maps --output-dir $(DEMO_OUT)/random
	$(VENV)/bin/mosnav-report $(DEMO_OUT)/oracle $(DEMO_OUT)/random --out $(DEMO_OUT)/report

# Reference baselines (random, frontier + GT detector, PPO checkpoint if any, oracle) and
# their table; variables in scripts/baselines.sh (HM3D: BASELINES_BENCHMARK=mosnav-v1/val/official
# BASELINES_ARGS="--dataset-dir DIR --scene-root DIR").
baselines: setup
	BIN=$(VENV)/bin bash scripts/baselines.sh

test: setup-baselines chromium habitat-sim
	$(PY) -m pytest -q -ra $(PYTEST_ARGS)

test-fast: setup chromium habitat-sim
	$(PY) -m pytest -q -m "not slow and not baselines" $(PYTEST_ARGS)

bench: setup
	$(PY) benchmarks/bench_env.py
	$(PY) benchmarks/bench_sim.py
	$(PY) benchmarks/bench_scale.py
	$(PY) benchmarks/bench_texels.py --size 4096 --grid 400 --objects 1000

# How closely the CPU simulator gives habitat-sim's numbers (needs habitat-sim; README table).
bench-agreement: setup habitat-sim
	$(PY) benchmarks/bench_agreement.py

clean:
	rm -rf $(VENV) $(DEMO_OUT) baselines_output outputs *.egg-info
