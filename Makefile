# The two commands of the README:
#   make book   set up .venv and build the HTML site into _build/html
#   make test   set up .venv (and, as root, Chromium), type-check posenc, build the site and
#               run every test
# Everything test needs is a locked Python package (requirements.lock), make, and Debian's
# chromium; no npm. pytest's exit status reaches make untouched: a failure, or a run that
# collected no test at all (pytest exits 5), fails the target.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JB_FLAGS := -W -n --keep-going
# One worker per core of the machine; each test file stays on one worker (module fixtures); the
# JupyterLab notebooks are split over two files (tests/test_lab*.py) so both workers share them.
PYTEST_FLAGS ?= -n auto --dist loadfile

.PHONY: setup lock book test unit typecheck notebooks browser browser-deps lab lab-test bench clean pages grids pdf student classroom-kit

# The CPU kernels the book's stored runs were trained with (posenc/runtime.py, KERNEL_CAPS): every
# process make starts (build, kernels, tests, grids) re-trains them to the same bits.
export ONEDNN_MAX_CPU_ISA ?= AVX2
export ATEN_CPU_CAPABILITY ?= avx2

setup: $(STAMP)

# uv installs requirements.lock (hashes checked) and torch's CPU-only build; pip if uv cannot be had.
$(STAMP): requirements.lock pyproject.toml tools/setup_env.py
	$(PYTHON) -m tools.setup_env --venv $(VENV)
	touch $@

# Resolve requirements.txt (the direct pins) into requirements.lock (every package, exact, hashed).
lock:
	$(PYTHON) -m tools.setup_env --lock

# Execute the notebooks into the execution cache first, one kernel per core (tools/execute_book.py:
# a notebook runs again when its code, posenc, the extension, the lock or a stored result it reads
# changed), then the strict build, which finds every notebook cached.
book: setup
	$(BIN)/python -m tools.execute_book
	$(BIN)/jupyter-book build . $(JB_FLAGS)

# Build a subset of pages into OUT, e.g. make pages PAGES="book/02_sinusoidal" OUT=/tmp/ch2
pages: setup
	$(BIN)/python -m tools.partial_build --out "$(OUT)" $(PAGES)

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
	$(BIN)/python -m tools.make_pdf

student: setup
	$(BIN)/python -m tools.make_student

# The whole kit, checked: both PDFs and every student notebook run under nbval.
classroom-kit: pdf student
	$(BIN)/python -m pytest $(PYTEST_FLAGS) --nbval-lax _build/student tests/test_pdf.py tests/test_student.py

# One student notebook runs in make test as a smoke test: tests/test_student.py proves without a
# kernel that no cell after a removed solution needs a name only the solution binds, and
# make classroom-kit runs them all.
STUDENT_SMOKE := _build/student/01_why_order_matters.ipynb

# Type check and build side by side (mypy takes one core for about 40 s of a fresh clone; the
# build's kernels and Sphinx leave room for it), then every test: tests marked `site` read the
# build and fail (not skip) without it; only a missing Chromium skips the browser checks, with
# the reason. Every notebook runs twice: in the build (cached per notebook) and under nbval
# (book/). JupyterLab (tests/test_lab*.py) runs three of them in full, one per kind of explorer
# control, and opens the others (make lab-test runs them all); tests/test_pdf.py prints the PDF
# on one worker while the other worker runs other tests.
test: setup browser-deps
	$(MAKE) --no-print-directory -j2 --output-sync=target typecheck book
	$(MAKE) --no-print-directory student
	$(BIN)/python -m pytest $(PYTEST_FLAGS) --nbval-lax tests book $(STUDENT_SMOKE)

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

# Every notebook run in full in a real JupyterLab driven by headless Chromium (tests/test_lab*.py),
# no build needed.
lab-test: setup browser-deps
	POSENC_LAB_RUN=all $(BIN)/python -m pytest $(PYTEST_FLAGS) tests -m lab

# Regenerate every stored grid in book/data (experiments/configs.py defines them; GRIDS_ARGS="--dry-run"
# lists each grid's runs and compares them with the stored file). All of them from nothing take many
# CPU-hours: each realistic and real-text grid from 1.2 to 2.7 core-hours, except the realistic
# matrix (4.3, about 2 h 10 min on two processes); the chapters say what each grid cost.
# Resumable: each finished run is kept in experiments/.cache/runs, so a rerun skips it.
# Options go through GRIDS_ARGS, e.g. make grids GRIDS_ARGS="--grid ch6 --jobs 1" or "--dry-run".
grids: setup
	$(BIN)/python -m experiments $(GRIDS_ARGS)

bench: setup
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf _build
