# The two commands of the README:
#   make book   set up .venv and build the HTML site into _build/html
#   make test   set up .venv (and, as root, Chromium) and run every test
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NPM_STAMP := node_modules/.installed
JB_FLAGS := -W -n --keep-going
PYTEST_FLAGS ?= -n 2 --dist loadfile

.PHONY: setup book rebuild test unit notebooks browser browser-deps bench clean pages

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required, found " + sys.version.split()[0]'
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

# axe-core for the accessibility checks, pinned in package-lock.json.
$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
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
browser-deps: $(NPM_STAMP)
	@if command -v chromium >/dev/null 2>&1; then echo "chromium: $$(command -v chromium)"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || echo "could not install chromium: browser checks will be skipped"; \
	else echo "chromium not found and not root: browser checks will be skipped (install Debian's chromium to run them)"; fi

test: setup browser-deps book
	$(BIN)/python -m pytest $(PYTEST_FLAGS) --nbval-lax

unit: setup
	$(BIN)/python -m pytest tests -m "not browser"

notebooks: setup
	$(BIN)/python -m pytest $(PYTEST_FLAGS) --nbval-lax book

browser: setup browser-deps
	$(BIN)/python -m pytest tests -m browser

bench: setup
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf _build
