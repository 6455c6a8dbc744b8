# On a fresh machine with Python 3.11+ and no conda:
#   make report   set up .venv if needed, the system packages the PDF needs, and regenerate
#                 results/report/: the default study, about 105 min on 2 cores
#   make html     the same but for the PDF (results/report/index.html and what it shows)
#   make quick    as make report, on the test config (config/test.yaml): about 2 min on 2 cores
#   make test     set up .venv if needed, the system packages the tests need, and run them
#   make engines  build the training and serving engines .venv does not carry, each in its own
#                 interpreter .engines/<name>/ from engines/<name>.txt (posenc model --engines)
# Ctrl-C stops a run with one line; the same command resumes it (finished jobs are kept).
# System packages (python -m posenc.sysdeps): installed with apt when run as root, otherwise
# the command that installs them is printed and the tests that need them skip by name.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CORES ?= all

# Snakemake, with Ctrl-C ending in one line that names the make command to rerun
# (posenc.interrupt); --rerun-incomplete, so that the rerun redoes the jobs Ctrl-C stopped.
SNAKEMAKE = $(BIN)/python -m posenc.interrupt "make $@" $(BIN)/snakemake --cores $(CORES) \
	--rerun-incomplete

.PHONY: report html quick test setup system-deps engines clean

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

system-deps: setup
	$(BIN)/python -m posenc.sysdeps test

# The times are the README's measurements of cold runs on 2 cores (Benchmarks: the test
# config's 123 s; the default study's 83.4 min at a83ebef, plus the tasks section's 2651
# core-s measured at 99abb3a, about 22 min on 2 cores).
report: setup
	$(BIN)/python -m posenc.sysdeps report
	@echo "make report: the default study, about 105 min on 2 cores (make html skips the PDF;" \
		"make quick runs the test config, about 2 min)"
	$(SNAKEMAKE)

html: setup
	@echo "make html: the default study but for the PDF, about 104 min on 2 cores"
	$(SNAKEMAKE) html

quick: setup
	$(BIN)/python -m posenc.sysdeps report
	@echo "make quick: the test config, about 2 min on 2 cores"
	$(SNAKEMAKE) --configfile config/test.yaml

test: system-deps
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest $(PYTEST_ARGS)

# ENGINES="vllm sglang" builds those alone; a folder whose files did not change is kept.
engines: setup
	$(BIN)/python -m posenc.engines.build $(ENGINES)

clean:
	rm -rf results/* .snakemake
