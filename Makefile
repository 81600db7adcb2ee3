# Kubelab's two commands: `make run` starts the lab, `make test` checks everything CI checks.
#
#   make run    create .venv (python3.11), install requirements.txt, compile the translations, migrate,
#               start the lab
#   make test   install what the tests need (etcd-server, nodejs ...), then ruff, mypy, import-linter,
#               the JavaScript unit tests (node --test) and pytest
#   make lint   ruff, mypy, import-linter and the course content's checks (manage.py checkcontent)
#   make js-test  the front end's unit tests only (tests/js/*.test.mjs, Node 18 or later)
#   make messages compile the interface's translations (locale/*/LC_MESSAGES/*.po -> .mo)
#   make bench  the store benchmark, quick version
#   make clean  remove caches (not .venv, not var/)
#
# RUNLAB_ARGS passes options to `manage.py runlab`, e.g. make run RUNLAB_ARGS="--web 0.0.0.0:8000".

SHELL := /bin/bash
.DEFAULT_GOAL := run

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
RUNLAB_ARGS ?=
# Python keeps each module's compiled bytecode in __pycache__/ (ignored by git) and later processes
# read it. With PYTHONDONTWRITEBYTECODE set in the environment, every process compiles the lab's six
# hundred modules again: about a second and a half at each start of runlab, of a manage.py command,
# of a benchmark, and the test suite starts such processes by the hundred.
unexport PYTHONDONTWRITEBYTECODE
MYPY_TARGETS := controlplane config courses manage.py $(wildcard bench) tests

.PHONY: run test lint js-test bench clean venv debian-packages messages gettext

# -- the virtual environment ---------------------------------------------------------------------

# .venv/bin/pip exists only once `venv` has fully succeeded (Debian's python without python3-venv
# leaves a .venv with no pip behind: that one is removed and made again).
$(VENV)/bin/pip:
	@if [ -z "$(PYTHON)" ]; then echo "Python 3.11 is needed: apt-get install python3.11" >&2; exit 1; fi
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || \
		{ echo "Kubelab needs Python 3.11; $(PYTHON) is $$($(PYTHON) --version)" >&2; exit 1; }
	@rm -rf $(VENV)
	@$(PYTHON) -m venv $(VENV) 2>/dev/null || { \
		rm -rf $(VENV); \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "Installing python3-venv (Debian ships venv separately) ..."; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; \
			$(PYTHON) -m venv $(VENV); \
		else \
			echo "Creating .venv failed: install Debian's venv support (sudo apt-get install python3-venv)" >&2; \
			exit 1; \
		fi; }
	@echo "Created $(VENV) with $$($(PY) --version)"

venv: $(VENV)/bin/pip

# The stamps make pip run only when the requirements change.
$(VENV)/.requirements.stamp: requirements.txt | $(VENV)/bin/pip
	$(PIP) install -q -r requirements.txt
	@touch $@

$(VENV)/.requirements-dev.stamp: requirements.txt requirements-dev.txt | $(VENV)/bin/pip
	$(PIP) install -q -r requirements-dev.txt
	@touch $@ $(VENV)/.requirements.stamp

# -- run -----------------------------------------------------------------------------------------

# runlab applies pending migrations itself, in the data directory it is given (RUNLAB_ARGS may move it).
run: $(VENV)/.requirements.stamp messages
	$(PY) manage.py runlab $(RUNLAB_ARGS)

# -- translations --------------------------------------------------------------------------------

# The interface's catalogs: locale/<locale>/LC_MESSAGES/django.po are the sources (translated by hand;
# `python tools/i18n_check.py --update` refreshes them from the templates and the code, and without
# --update lists what is untranslated); Django reads the .mo files compiled from them, which are build
# products (.gitignore). GNU gettext's msgfmt compiles them, as Django's compilemessages does, with
# --check-format: a translation whose %(name)s placeholders differ from the English fails here, not on a
# page. gettext is Debian's (its xgettext also extracts the messages for the catalog test).
#
# Translations: djangojs.po is the same for what the page's scripts write (static/topology/i18n.js;
# Django's JavaScriptCatalog serves it compiled).
CATALOGS := $(patsubst %.po,%.mo,$(wildcard locale/*/LC_MESSAGES/django.po locale/*/LC_MESSAGES/djangojs.po))

messages: $(CATALOGS)

locale/%.mo: locale/%.po | gettext
	msgfmt --check-format -o $@ $<

gettext:
	@if ! command -v msgfmt >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "Installing gettext (msgfmt compiles the translations) ..."; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gettext >/dev/null; \
		else \
			echo "msgfmt is missing: sudo apt-get install gettext (it compiles the translations)" >&2; \
			exit 1; \
		fi; \
	fi

# -- test ----------------------------------------------------------------------------------------

# Debian packages the tests need: etcd-server, wrk (the load generator of `python -m bench api`, whose
# smoke test runs it), chromium (the browser tests drive it with Playwright), fonts-noto-cjk (Chinese
# pages need a Han font: the screenshot test checks that Chromium draws them with it), gettext (msgfmt
# and xgettext: the translations, `make messages`) and nodejs (`node --test` runs the front end's unit
# tests). Installed when we are root; otherwise we say what to install (the
# tests that need them are skipped locally and fail in CI).
debian-packages:
	@if [ ! -x /usr/bin/etcd ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "Installing etcd-server ..."; \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server >/dev/null; } \
				|| echo "Could not install etcd-server; the etcd tests will fail in CI" >&2; \
		else \
			echo "etcd is missing: sudo apt-get install etcd-server (the etcd tests need it)"; \
		fi; \
	fi
	@if ! command -v wrk >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "Installing wrk ..."; \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; } \
				|| echo "Could not install wrk; python -m bench api will report its GET and LIST lines as errors" >&2; \
		else \
			echo "wrk is missing: sudo apt-get install wrk (python -m bench api needs it)"; \
		fi; \
	fi
	@if [ ! -x /usr/bin/chromium ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "Installing chromium ..."; \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
				|| echo "Could not install chromium; the browser tests will fail in CI" >&2; \
		else \
			echo "chromium is missing: sudo apt-get install chromium (the browser tests need it)"; \
		fi; \
	fi
	@if ! dpkg -s fonts-noto-cjk >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "Installing fonts-noto-cjk ..."; \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-cjk >/dev/null; } \
				|| echo "Could not install fonts-noto-cjk; the Chinese screenshot test will fail in CI" >&2; \
		else \
			echo "fonts-noto-cjk is missing: sudo apt-get install fonts-noto-cjk (the Chinese screenshot test needs it)"; \
		fi; \
	fi
	@if ! command -v xgettext >/dev/null || ! command -v msgfmt >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "Installing gettext ..."; \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gettext >/dev/null; } \
				|| echo "Could not install gettext; the translations cannot be compiled or checked" >&2; \
		else \
			echo "gettext is missing: sudo apt-get install gettext (the translations need msgfmt and xgettext)"; \
		fi; \
	fi
	@if ! command -v node >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "Installing nodejs ..."; \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs >/dev/null; } \
				|| echo "Could not install nodejs; make js-test will fail" >&2; \
		else \
			echo "node is missing: sudo apt-get install nodejs (make js-test needs it)"; \
		fi; \
	fi

lint: $(VENV)/.requirements-dev.stamp
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy $(MYPY_TARGETS)
	$(VENV)/bin/lint-imports
	$(PY) manage.py checkcontent

# The front end's unit tests: plain ES modules (static/topology/) tested by Node's own runner, nothing
# to install but Node 18 or later. The shell expands the glob, as every Node version expects.
js-test:
	@command -v node >/dev/null || { echo "node is missing: sudo apt-get install nodejs" >&2; exit 1; }
	@node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 18 ? 1 : 0)' || \
		{ echo "make js-test needs Node 18 or later; node is $$(node --version)" >&2; exit 1; }
	node --test tests/js/*.test.mjs

# pytest's exit status 5 means "no tests ran": that is a failure, not a pass. The suite runs on
# PYTEST_WORKERS processes (pytest-xdist), each taking whole modules (--dist loadfile), so that a
# module's live lab, started once for its tests, serves them all: most slow tests wait on a lab's
# timers or a subprocess, and two workers use two cores while they wait. PYTEST_WORKERS=0 runs the
# suite in one process.
PYTEST_WORKERS ?= 2
test: debian-packages messages lint js-test
	@rc=0; $(PY) -m pytest -q -p no:cacheprovider $(if $(filter-out 0,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist loadfile) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest ran no tests: failing" >&2; exit 1; fi; \
	exit $$rc

bench: $(VENV)/.requirements-dev.stamp
	$(PY) -m bench store --quick

clean:
	rm -rf .mypy_cache .ruff_cache .pytest_cache .hypothesis .import_linter_cache
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -exec rm -rf {} +
