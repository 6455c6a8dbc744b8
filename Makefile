# Two commands on a fresh machine with Python 3.11+ and no conda:
#   make report   set up .venv if needed and regenerate results/report/
#   make test     set up .venv if needed and run the tests
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORES ?= all

.PHONY: report test setup clean

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

report: setup
	$(BIN)/snakemake --cores $(CORES)

test: setup
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest $(PYTEST_ARGS)

clean:
	rm -rf results/* .snakemake
