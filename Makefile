# Two entry points for a new user (see README.md):
#   make run   - install into .venv and run the whole product on embedded defaults
#   make test  - install into .venv and run every check and the whole test suite
# Every target is idempotent: re-running it only redoes what changed.

PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
RUN_STAMP := $(VENV)/.run-requirements.stamp
DEV_STAMP := $(VENV)/.dev-requirements.stamp
PIP_INSTALL := $(PY) -m pip install --disable-pip-version-check --require-hashes
# requirements/*.in are edited by hand; the hashed locks next to them are pip-tools' output.
PIP_COMPILE := $(abspath $(VENV))/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras \
	--no-emit-find-links --no-emit-index-url
MANAGE := $(PY) manage.py

# Test runs use the real PostgreSQL and Redis of this machine (override for your own).
TEST_ENV := DJANGO_SETTINGS_MODULE=config.settings.test
# Production settings with dummy secrets: only for `check --deploy`, never started.
DEPLOY_ENV := DJANGO_SETTINGS_MODULE=config.settings.production \
	SECRET_KEY=ci-deploy-check-0123456789-abcdefghijklmnopqrstuvwxyz-ABCDEFGHIJ \
	ALLOWED_HOSTS=moderation.example.com \
	DATABASE_URL=postgres://postgres@127.0.0.1:5432/moderation \
	CELERY_BROKER_URL=redis://127.0.0.1:6379/2 \
	REDIS_URL=redis://127.0.0.1:6379/1
SCHEMA_FILE := var/openapi.yaml

.PHONY: help install install-run lock run test lint typecheck django-checks schema pytest services browsers deploy-tools test-tools clean

help:
	@echo "make run   - install into $(VENV) and run the product on embedded defaults (127.0.0.1:8000)"
	@echo "make test  - install into $(VENV) and run lint, type checks, Django checks, schema and pytest"

$(PY):
	$(PYTHON) -m venv $(VENV)

# make run: the runtime, the training toolchain and the local servers (requirements/local.txt).
$(RUN_STAMP): requirements/local.txt | $(PY)
	$(PIP_INSTALL) -r requirements/local.txt
	$(PY) -m pip check
	@touch $@

# make test: the same pins plus the test, lint and type-check tools (requirements/dev.txt).
$(DEV_STAMP): requirements/dev.txt | $(PY)
	$(PIP_INSTALL) -r requirements/dev.txt
	$(PY) -m pip check
	@touch $@

install-run: $(RUN_STAMP)

install: $(DEV_STAMP)

# After editing a requirements/*.in file: re-resolve every lock, each constrained by the one
# below it (runtime <- training <- local <- dev), so all of them agree on every version.
# --strip-extras keeps the locks usable as constraints (-c), which may not carry extras; the
# installed lines of tritonclient get theirs back, since pip's hash-checking mode refuses
# nvidia-pytriton's `tritonclient[grpc,http]~=2.50` unless an installed line names those extras.
lock: install
	cd requirements && for lock in runtime training local dev; do \
		$(PIP_COMPILE) --output-file $$lock.txt $$lock.in || exit 1; \
		sed -i 's/^tritonclient==/tritonclient[grpc,http]==/' $$lock.txt; \
	done

run: install-run
	$(PY) scripts/run_local.py

# Chromium + driver for the end-to-end tests (Debian packages; needs root or sudo).
browsers:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then \
		echo "chromium: $$(chromium --version 2>/dev/null | head -1)"; \
	else \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO="sudo -n"; \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; \
	fi

# dclint (npm) validates and lints deploy/compose*.yaml (tests/deploy/test_manifests.py). Pinned
# here because requirements/ only holds Python packages; npm is the machine's (Node.js 20).
DCLINT_VERSION := 3.1.0
AXE_VERSION := 4.14.1
AXE := var/deploy-tools/node_modules/axe-core/axe.min.js
DCLINT := var/deploy-tools/node_modules/.bin/dclint
$(DCLINT): Makefile
	@mkdir -p var/deploy-tools
	npm install --prefix var/deploy-tools --no-audit --no-fund --no-save --silent \
		dclint@$(DCLINT_VERSION) axe-core@$(AXE_VERSION)
	@touch $(DCLINT) $(AXE)

# axe-core for the browser tests' accessibility checks (tests/e2e/axe.py injects axe.min.js).
# Installed with dclint in one npm call: a second --no-save install would remove the first.
$(AXE): $(DCLINT)

deploy-tools: $(DCLINT) $(AXE)

# whatwg-url (npm), the URL Standard's reference implementation by its editors: core.urls is
# property-tested against it (tests/scoring/test_urls_whatwg.py). 16.x is the newest line that
# runs on Node.js 20 (17.x needs 22).
WHATWG_URL_VERSION := 16.0.1
WHATWG_URL := var/test-tools/node_modules/whatwg-url/package.json
$(WHATWG_URL): Makefile
	@mkdir -p var/test-tools
	npm install --prefix var/test-tools --no-audit --no-fund --no-save --silent whatwg-url@$(WHATWG_URL_VERSION)
	@touch $(WHATWG_URL)

test-tools: $(WHATWG_URL)

services: install
	$(TEST_ENV) $(PY) scripts/check_services.py

# lint-imports: the import contracts of pyproject.toml (rooms, no import circles; docs/architecture.md).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: install
	$(VENV)/bin/mypy .

django-checks: install
	$(TEST_ENV) $(MANAGE) makemigrations --check --dry-run
	$(TEST_ENV) $(MANAGE) check --fail-level WARNING
	$(DEPLOY_ENV) $(MANAGE) check --deploy --fail-level WARNING

schema: install
	@mkdir -p var
	$(TEST_ENV) $(MANAGE) spectacular --validate --fail-on-warn --file $(SCHEMA_FILE)
	@echo "OpenAPI schema valid: $(SCHEMA_FILE)"

# pytest exits 5 when it collected nothing (e.g. a -k filter that matches no test): report it
# plainly instead of failing with a bare status.
pytest: install
	@rc=0; $(TEST_ENV) $(VENV)/bin/pytest $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest: no tests collected"; echo "0 passed, 0 failed"; rc=0; fi; \
	exit $$rc

test: install browsers services deploy-tools test-tools lint typecheck django-checks schema pytest

clean:
	rm -rf $(VENV) var/openapi.yaml .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
