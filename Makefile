# Legacy Memory: `make run` serves everything (development), `make serve` the same in production
# (gunicorn), `make test` passes the tests. Needs only Python 3.11+.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
HOST ?= 127.0.0.1
WEB_CONCURRENCY ?= 2
WEB_THREADS ?= 4
WEB_TIMEOUT ?= 120
FORWARDED_ALLOW_IPS ?= 127.0.0.1
STAMP := $(VENV)/.installed

.PHONY: install run serve worker test screenshots lint browser redis stop-db upgrade-db clean-data help contract

help:
	@echo "make run      set up (if needed), migrate, serve on http://$(HOST):$(PORT) with a job worker"
	@echo "make serve    the same in production: gunicorn ($(WEB_CONCURRENCY) workers), needs SECRET_KEY (docs/deployment.md)"
	@echo "make test     set up (if needed), lint and run the whole test suite"
	@echo "make screenshots  run the browser tests and rewrite docs/screenshots/*.png"
	@echo "make install  create .venv and install the project with its test dependencies"
	@echo "make stop-db  stop the embedded PostgreSQL (it outlives make run for fast restarts)"
	@echo "make upgrade-db  copy an old PostgreSQL 16 embedded database (.data/pg) to PostgreSQL 18 (.data/pg18)"
	@echo "make clean-data  stop the embedded PostgreSQL and delete its data"

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "Python 3.11+ is required"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	@echo "Serving on http://$(HOST):$(PORT) (dashboard /, API /api/, docs /api/docs, admin /admin/)"
	@PY=$(PY) HOST=$(HOST) PORT=$(PORT) bin/run

# Production: refuses a weak SECRET_KEY (check --deploy lists what else to set for HTTPS).
serve: $(STAMP)
	$(PY) manage.py check --deploy --fail-level ERROR
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	@echo "Serving with gunicorn ($(WEB_CONCURRENCY) workers × $(WEB_THREADS) threads) on http://$(HOST):$(PORT) and a job worker ($${Q_BROKER:-orm} queue)"
	@PY=$(PY) HOST=$(HOST) PORT=$(PORT) WEB_CONCURRENCY=$(WEB_CONCURRENCY) WEB_THREADS=$(WEB_THREADS) \
	  WEB_TIMEOUT=$(WEB_TIMEOUT) FORWARDED_ALLOW_IPS=$(FORWARDED_ALLOW_IPS) bin/run serve

worker: $(STAMP)
	$(PY) manage.py qcluster

# Browser tests drive Debian's chromium through Playwright; install it when missing.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = "0" ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "chromium is missing: install Debian's chromium package (sudo apt-get install chromium)"; exit 1; \
	  fi; }

# The Redis tests start Debian's redis-server on a free port; install it when missing.
redis:
	@command -v redis-server >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = "0" ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	  else \
	    echo "redis-server is missing: install Debian's redis-server package (sudo apt-get install redis-server)"; exit 1; \
	  fi; }

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-logo
	$(PY) manage.py makemigrations --check --dry-run

test: $(STAMP) browser redis lint
	$(PY) -m pytest

# The API contract at length: schemathesis with CONTRACT_MAX_EXAMPLES cases per operation (the
# suite runs 5) against a live server (docs/security.md "The API contract").
CONTRACT_MAX_EXAMPLES ?= 100
contract: $(STAMP)
	CONTRACT_MAX_EXAMPLES=$(CONTRACT_MAX_EXAMPLES) $(PY) -m pytest tests/security/test_contract.py -q

# The browser tests write docs/screenshots/ only when asked: a plain test run changes no tracked file.
screenshots: $(STAMP) browser
	$(PY) -m pytest tests/browser --screenshots

# The embedded PostgreSQL outlives `make run` so that the next command starts at once. Stops an old
# PostgreSQL 16 server left in .data/pg by an upgrade too.
stop-db: $(STAMP)
	@$(PY) -c 'import os; from pathlib import Path; from memory_site.database import stop_embedded_server; d = Path(os.environ.get("MEMORY_DATA_DIR", ".data")).resolve(); print("embedded PostgreSQL", "stopped" if stop_embedded_server(d) else "was not running")'

# Done at the first start too; by hand when that failed. The old folder is kept as a backup.
upgrade-db: $(STAMP)
	@$(PY) -m memory_site.embedded_upgrade

clean-data: stop-db
	rm -rf .data
