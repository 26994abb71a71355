# The two commands a new user runs: `make demo` and `make test`; `make lab` opens the notebooks.
# All of them set up .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo lab test bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m harpe_lab demo

# JupyterLab on the numbered notebooks (Ctrl-C stops it)
# Jupyter refuses root unless told; containers often run as root
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: $(STAMP)
	$(PY) -m jupyter lab $(LAB_ROOT) notebooks/

# pytest exits 5 when it selected no test: fail loudly rather than pass on nothing. Two
# workers (pytest-xdist), each file whole on one: a notebook's cells run in order in one
# kernel, a module's fixtures are made once.
test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest selected no tests" >&2; exit 1; fi; \
	exit $$rc
	$(PY) notebooks/strip_outputs.py --check
	$(PY) -m mkdocs build --strict --quiet

# Benchmarks (not part of `make test`): ratios measured side by side, written to
# benchmarks/RESULTS.md. BENCH_ARGS=--quick for a fast pass.
bench: $(STAMP)
	$(PY) -c "import langchain_core, distributed" 2>/dev/null || $(PY) -m pip install --quiet -e '.[bench]'
	$(PY) -m benchmarks.run $(BENCH_ARGS)

clean:
	rm -rf $(VENV) out build *.egg-info
