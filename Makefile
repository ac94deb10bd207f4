# wirecheck — every target does its own set-up; `make install` is idempotent.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: install run demo test bench fuzz-smoke lint clean

install: $(STAMP)

# Re-install only when the project metadata changes.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The main job: reference broker of every registered protocol + its black-box suite.
run: install
	$(VENV)/bin/wirecheck run --reports reports

demo: run

test: install
	$(PY) -m pytest -n auto -q $(PYTEST_ARGS)

bench: install
	$(PY) benchmarks/run.py --out reports/bench.json

fuzz-smoke: install
	$(PY) -m fuzz.run_smoke

clean:
	rm -rf $(VENV) reports/*.xml reports/*.json .pytest_cache .hypothesis
