# Two commands on a fresh machine with Python 3.11+ and no conda:
#   make report   set up .venv if needed, the system packages the PDF needs, and regenerate
#                 results/report/
#   make test     set up .venv if needed, the system packages the tests need, and run them
# System packages (python -m posenc.sysdeps): installed with apt when run as root, otherwise
# the command that installs them is printed and the tests that need them skip by name.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORES ?= all

.PHONY: report test setup system-deps clean

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

system-deps: setup
	$(BIN)/python -m posenc.sysdeps test

report: setup
	$(BIN)/python -m posenc.sysdeps report
	$(BIN)/snakemake --cores $(CORES)

test: system-deps
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest $(PYTEST_ARGS)

clean:
	rm -rf results/* .snakemake
