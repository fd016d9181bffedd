# The two commands a new machine needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8000
# Test processes for `make test`: one per core, each with its own DynamoDB Local and table
# (tests/conftest.py); a test module stays on one process (its module fixtures are shared).
TEST_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: run test check docs docs-serve bench bench-webhooks bench-fairness bench-import bench-lifecycle bench-live-soak schema schema-check package clean soak upgrade-test lock

## Installs come from the locks (requirements-dev.lock, and requirements.lock for the runtime
## alone): every package at one version with the hash of each file, resolved from pyproject.toml's
## ranges by `make lock`. The installer is the lock's own uv, put in a throwaway venv by the
## machine's Python through pip --require-hashes (deploy/lockfile.py reads its entry from the
## lock); BOOTSTRAP_UV leaves "$$uv" set for the rest of its recipe line.
BOOTSTRAP_UV = boot=$$(mktemp -d) && trap 'rm -rf "$$boot"' EXIT && $(PYTHON) -m venv "$$boot" && \
	$(PYTHON) -m deploy.lockfile uv-requirement > "$$boot/uv-requirement.txt" && \
	"$$boot/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps \
		--only-binary :all: --requirement "$$boot/uv-requirement.txt" && uv="$$boot/bin/uv"

## uv reads no configuration file of the machine or the user (--no-config) and never downloads a
## Python: the interpreter is $(PYTHON).
UV_ENV := UV_NO_CONFIG=1 UV_PYTHON_DOWNLOADS=never

## .venv exactly as locked: a venv with no seed packages, then `uv pip sync`, which installs what
## the lock names, checks each file's hash and removes anything else. --compile-bytecode writes
## each module's .pyc at install: uv writes none by default, and where PYTHONDONTWRITEBYTECODE is
## set Python writes none either, so every start would compile every module from source.
$(STAMP): requirements-dev.lock
	$(BOOTSTRAP_UV) && export $(UV_ENV) && "$$uv" venv --quiet --allow-existing --python $(PYTHON) $(VENV) && \
		"$$uv" pip sync --require-hashes --compile-bytecode --python $(BIN)/python requirements-dev.lock
	touch $(STAMP)

## Re-resolve the locks from pyproject.toml's ranges, keeping every pin the ranges still allow, and
## rewrite deploy/requirements-lambda.txt from them. Upgrades: LOCK_ARGS=--upgrade (everything) or
## LOCK_ARGS='--upgrade-package strawberry-graphql' (one package); then `make test`. The locks come
## from PyPI, uv's default index: uv reads neither pip's configuration nor, here, any index
## variable of its own.
LOCK := pip compile pyproject.toml --universal --python-version 3.11 --generate-hashes --custom-compile-command 'make lock'
LOCK_ENV := -u UV_INDEX -u UV_DEFAULT_INDEX -u UV_INDEX_URL -u UV_EXTRA_INDEX_URL -u UV_FIND_LINKS $(UV_ENV)
lock:
	$(BOOTSTRAP_UV) && env $(LOCK_ENV) "$$uv" $(LOCK) --quiet --extra dev --output-file requirements-dev.lock $(LOCK_ARGS) && \
		env $(LOCK_ENV) "$$uv" $(LOCK) --quiet --constraint requirements-dev.lock --output-file requirements.lock && \
		$(PYTHON) -m deploy.lockfile lambda

## Serve the API on http://127.0.0.1:$(PORT) over an embedded DynamoDB Local with demo data.
run: $(STAMP)
	PORT=$(PORT) $(BIN)/python server.py

## Debian's Chromium for the GraphiQL browser test (tests/graphql_api/graphiql); installed once.
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null

## The whole test suite against a throwaway in-memory DynamoDB Local.
test: $(STAMP) $(CHROMIUM)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

## Lint, type checks, and the documentation's strict build (a broken link or anchor, or a page
## missing from mkdocs.yml's nav, fails it).
check: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(MKDOCS) build --strict --quiet

## The documentation site (docs/, mkdocs.yml) in build/site; docs-serve rebuilds it as you edit.
## NO_MKDOCS_2_WARNING: Material's banner about its own end of life, printed on every build.
MKDOCS := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs
docs: $(STAMP)
	$(MKDOCS) build --strict
docs-serve: $(STAMP)
	$(MKDOCS) serve --strict --dev-addr 127.0.0.1:8001

## Benchmarks (not part of `make test`): prints tables, writes bench/results/latest.json.
bench: $(STAMP)
	$(BIN)/python -m bench
	$(BIN)/python -m bench.webhooks

## Webhook delivery lag p50/p95 and deliveries per second (part of `make bench`).
bench-webhooks: $(STAMP)
	$(BIN)/python -m bench.webhooks

## Fair tenants: a quiet tenant's p95 alone and beside one sending 10x more (about 2 minutes idle).
bench-fairness: $(STAMP)
	$(BIN)/python -m bench.fairness

## Live updates' memory: each worker's RSS and fds over SOAK_MINUTES (3) with SOAK_SUBSCRIBERS (20) subscribers.
bench-live-soak: $(STAMP)
	$(BIN)/python -m bench.live_soak --minutes $${SOAK_MINUTES:-3} --subscribers $${SOAK_SUBSCRIBERS:-20}

## Bulk onboarding: 1,000 rows through importEmployees, a re-run, and 1,000 createEmployee calls.
bench-import: $(STAMP)
	$(BIN)/python -m bench.imports

## Data lifecycle at 2,000 employees: export, restore round trip, erasure, offboarding (a few minutes).
bench-lifecycle: $(STAMP)
	$(BIN)/python -m bench.lifecycle

## Write schema.graphql from the code.
schema: $(STAMP)
	$(BIN)/python server.py export-schema

## What the code's schema breaks against schema.graphql at HEAD (or SCHEMA_CHECK_ARGS='--against v1.2'),
## for every operation clients send: exit 1 names each that breaks (docs "Evolving the schema").
schema-check: $(STAMP)
	$(BIN)/python server.py schema-check $(SCHEMA_CHECK_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

## The AWS Lambda deployment zip (build/lambda.zip) from pinned wheels for Lambda's platform.
package: $(STAMP)
	$(BIN)/python -m deploy.package

## Long fault runs (not part of `make test`): DynamoDB Local killed and restarted under load,
## a misbehaving proxy and a disconnect storm, for HR_SOAK_SECONDS (default 60) each.
soak: $(STAMP)
	HR_SOAK_SECONDS=$${HR_SOAK_SECONDS:-60} $(BIN)/python -m pytest tests/test_outages.py -s -p no:cacheprovider $(PYTEST_ARGS)

## An in-place upgrade from a real checkout of the previous release (not part of `make test`):
## its own `make run` writes demo and API data, this checkout's `server.py migrate` upgrades the
## data, and this checkout's server answers for it (tests/upgrade_release.py; a few minutes).
## The default: 8bac9fb, the release operators run now (layout 2). PREVIOUS_RELEASE=d3877fb
## (the last commit before 8c7f8f6, "Organisations own their email domains": before layout
## versions, email domains, application counters and name entries) runs every migration step.
PREVIOUS_RELEASE ?= 8bac9fb
upgrade-test: $(STAMP)
	$(BIN)/python -m tests.upgrade_release $(PREVIOUS_RELEASE)
