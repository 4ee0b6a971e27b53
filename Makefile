# The two commands of the README:
#   make book   set up .venv and build the HTML site into _build/html
#   make test   set up .venv (and, as root, Chromium), type-check posenc, build the site and
#               run every test
# Everything test needs is a pinned Python package (requirements.txt), make, and Debian's
# chromium; no npm. pytest's exit status reaches make untouched: a failure, or a run that
# collected no test at all (pytest exits 5), fails the target.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JB_FLAGS := -W -n --keep-going
# One worker per core of the machine; each test file stays on one worker (module fixtures).
PYTEST_FLAGS ?= -n auto --dist loadfile

.PHONY: setup book test unit typecheck notebooks browser browser-deps lab lab-test bench clean pages grids pdf student classroom-kit

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required, found " + sys.version.split()[0]'
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

# The execution cache keys on notebook contents only: when posenc changes, notebooks must
# run again, so drop the cache and Sphinx's pickled doctrees (an unchanged rebuild stays fast).
POSENC_SOURCES := $(wildcard posenc/*.py posenc/book/*.py book/_ext/*.py book/_ext/assets/*)
_build/.posenc-stamp: $(POSENC_SOURCES)
	rm -rf _build/.jupyter_cache _build/.doctrees
	mkdir -p _build && touch $@

book: setup _build/.posenc-stamp
	$(BIN)/jupyter-book build . $(JB_FLAGS)

# Build a subset of pages into OUT, e.g. make pages PAGES="book/02_sinusoidal" OUT=/tmp/ch2
pages: setup
	$(BIN)/python tools/partial_build.py --out "$(OUT)" $(PAGES)

# Chromium for the browser checks: installed from Debian when we can (root with apt).
# (axe-core comes from the pinned PyPI package axe-playwright-python, installed by setup.)
browser-deps:
	@if command -v chromium >/dev/null 2>&1; then echo "chromium: $$(command -v chromium)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || echo "could not install chromium: browser checks will be skipped"; \
	else echo "chromium not found and not root: browser checks will be skipped (install Debian's chromium to run them)"; fi

# Static type check of the package (settings in pyproject.toml, [tool.mypy]).
typecheck: setup
	$(BIN)/python -m mypy posenc

# The classroom kit (README, "Classroom kit"). make pdf: the built site printed in headless
# Chromium as _build/pdf/positional-encoding.pdf, with the worked solutions in
# positional-encoding-answers.pdf (tools/make_pdf.py). make student: the chapter notebooks with
# the solutions replaced by runnable stubs, in _build/student (tools/make_student.py).
pdf: setup browser-deps book
	$(BIN)/python tools/make_pdf.py

student: setup
	$(BIN)/python tools/make_student.py

# Part of make test, before pytest: print the PDF that tests/test_pdf.py reads (without
# Chromium those tests skip, with the reason), and run every student notebook under nbval
# (one torch thread per kernel, as tests/conftest.py sets for the main run).
classroom-kit: setup browser-deps book student
	$(BIN)/python tools/make_pdf.py --if-chromium
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest $(PYTEST_FLAGS) --nbval-lax _build/student

# Type check first, then build, then every test: tests marked `site` read the build and fail
# (not skip) without it; only a missing Chromium skips the browser checks, with the reason.
test: setup typecheck browser-deps book classroom-kit
	$(BIN)/python -m pytest $(PYTEST_FLAGS) --nbval-lax

# Unit tests without a build: leaves out the tests that need Chromium, JupyterLab or the built site.
unit: setup
	$(BIN)/python -m pytest $(PYTEST_FLAGS) tests -m "not browser and not site and not lab"

notebooks: setup
	$(BIN)/python -m pytest $(PYTEST_FLAGS) --nbval-lax book

# The checks of the built site only (static and in Chromium); builds it first.
browser: setup browser-deps book
	$(BIN)/python -m pytest $(PYTEST_FLAGS) tests -m "browser or site"

# Read the book live: JupyterLab on book/ with the project's kernel (MyST prose and {eval} numbers render).
lab: setup
	$(BIN)/jupyter lab book

# The notebooks in a real JupyterLab driven by headless Chromium (tests/test_lab*.py), no build needed.
lab-test: setup browser-deps
	$(BIN)/python -m pytest $(PYTEST_FLAGS) tests -m lab

# Regenerate every stored grid in book/data: chapters 6, 7, 8 and 10 (172 runs, ~36 CPU-minutes),
# the task suite (270 runs of 1,000 steps, ~75 CPU-minutes), the encoder checks (45 runs) and the
# encoder task suite (90 runs) and chapter 11's RoPE scaling grid (80 runs, ~40 CPU-minutes),
# ~2.5 CPU-hours in all: about 80 minutes on 2 idle cores, more when busy.
# Resumable: each finished run is kept in experiments/.cache/runs, so a rerun skips it.
# Options go through GRIDS_ARGS, e.g. make grids GRIDS_ARGS="--grid ch6 --jobs 1" or "--dry-run".
grids: setup
	$(BIN)/python experiments/grids.py $(GRIDS_ARGS)

bench: setup
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf _build
