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
# The Python 3.9 lane (HM3D users' stack: habitat-lab/-baselines v0.3.3 from source, habitat-sim
# 0.3.3, torch 2.8.0, this project from its built wheel): scripts/setup_py39.sh
VENV39 ?= .venv39

.PHONY: setup setup-baselines egl chromium habitat-sim demo baselines test test-py311 test-py39 lint test-fast dist readme-dist readme-baselines bench bench-agreement clean

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

# The demo/official benchmark setting (12 MOS + MOC episodes of the bundled scenes), the
# oracle on the same episodes with image goals (demo/image), the random run replayed with
# --diagnose (why each episode failed: $(DEMO_OUT)/random/diagnosis.json), then a report
# page comparing the runs: $(DEMO_OUT)/report/index.html ("Why episodes fail" under the
# leaderboard, each episode's maps side by side, the oracle's videos linked, the image
# run's maps with the goal image).
demo: setup
	rm -rf $(DEMO_OUT)
	$(VENV)/bin/mosnav-eval --benchmark demo/official --agent habitat_mosnav.agents.oracle:OracleAgent \
		--save-maps --save-video mp4 --output-dir $(DEMO_OUT)/oracle
	$(VENV)/bin/mosnav-eval --benchmark demo/official --agent random --save-maps --output-dir $(DEMO_OUT)/random
	$(VENV)/bin/mosnav-eval --benchmark demo/image --agent habitat_mosnav.agents.oracle:OracleAgent \
		--save-maps --output-dir $(DEMO_OUT)/oracle_image
	$(VENV)/bin/mosnav-replay $(DEMO_OUT)/random --diagnose
	$(VENV)/bin/mosnav-report $(DEMO_OUT)/oracle $(DEMO_OUT)/random $(DEMO_OUT)/oracle_image --out $(DEMO_OUT)/report

# Reference baselines (random, frontier + GT detector, PPO checkpoint if any, oracle) and
# their table; variables in scripts/baselines.sh (HM3D: BASELINES_BENCHMARK=mosnav-v1/val/official
# BASELINES_ARGS="--dataset-dir DIR --scene-root DIR").
baselines: setup
	BIN=$(VENV)/bin bash scripts/baselines.sh

# make baselines on demo/official, then its leaderboard into docs/BASELINES.md's demo table, with the commit
readme-baselines: setup
	BIN=$(VENV)/bin BASELINES_BENCHMARK=demo/official bash scripts/baselines.sh
	{ echo "\`make baselines\` (\`demo/official\`) at commit \`$$(git rev-parse --short HEAD)\`$$(git diff --quiet HEAD -- habitat_mosnav || echo ' with local changes'):"; \
	  echo; cat baselines_output/report/leaderboard.md; } | $(PY) scripts/readme_block.py baselines-table

# Both lanes: Python 3.11 (PyPI's habitat-lab, editable install) and Python 3.9 (the HM3D
# users' stack above; skipped in one line on a machine without Python 3.9), both set up first,
# then their suites side by side (scripts/test_lanes.sh: the longer lane's time, not the sum).
test: setup-baselines chromium habitat-sim lint
	bash scripts/test_lanes.sh $(PY) $(VENV39) $(PYTEST_ARGS)

test-py311: setup-baselines chromium habitat-sim lint
	$(PY) -m pytest -q -ra -n auto --durations=25 $(PYTEST_ARGS)

# The layout (ruff format; `$(PY) -m ruff format .` applies it), then pyflakes and syntax
# errors on Python 3.9's grammar (pyproject.toml's [tool.ruff])
lint: setup
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .

test-py39: egl chromium
	bash scripts/test_py39.sh $(VENV39) $(PYTEST_ARGS)

# The fast lane (about 3 minutes): every test but the slow end-to-end ones, on the base install
# (what needs habitat-baselines or habitat-sim skips in one line); `make test` is the full suite.
test-fast: setup chromium
	$(PY) -m pytest -q -m "not slow and not baselines" -n auto --durations=10 $(PYTEST_ARGS)

# sdist + wheel in dist/ (the wheel holds the demo data, configs, the .pth start-up hook and
# every command), checked by twine, and their sizes printed; tracked files stay as they are
# (`make readme-dist` puts the printed sizes into docs/DEVELOPMENT.md)
WHEEL_SIZE = $(PY) -c "import glob, os; w, = glob.glob('dist/*.whl'); t, = glob.glob('dist/*.tar.gz'); \
	  print('the wheel is %.1f MB (%s bytes), the sdist %.1f MB' % (os.path.getsize(w) / 1e6, \
	  format(os.path.getsize(w), ','), os.path.getsize(t) / 1e6))"

dist: setup
	$(PIP) build twine
	rm -rf dist
	$(PY) -m build --outdir dist .
	$(PY) -m twine check --strict dist/*
	@ls -l dist
	@$(WHEEL_SIZE)

readme-dist: dist
	@$(WHEEL_SIZE) | $(PY) scripts/readme_block.py wheel-size

bench: setup
	$(PY) benchmarks/bench_env.py
	$(PY) benchmarks/bench_sim.py
	$(PY) benchmarks/bench_scale.py
	$(PY) benchmarks/bench_texels.py --size 4096 --grid 400 --objects 1000
	$(PY) benchmarks/bench_render.py

# How closely the CPU simulator gives habitat-sim's numbers (needs habitat-sim; docs/CPU_SIMULATOR.md table).
bench-agreement: setup habitat-sim
	$(PY) benchmarks/bench_agreement.py

clean:
	rm -rf $(VENV) $(VENV39) $(DEMO_OUT) baselines_output outputs *.egg-info dist
