# lambda-inbox developer and CI entry points. All tools run from .venv explicitly.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DYNAMODB_LOCAL_DIR ?= .cache/dynamodb-local

export SAM_CLI_TELEMETRY := 0
export DYNAMODB_LOCAL_DIR
# Compiled bytecode is kept, in one ignored folder, also where the environment sets
# PYTHONDONTWRITEBYTECODE: without it every process of a run (the test workers and every command
# they start) compiles all it imports again, about an eighth of `make test` on two cores
# (docs/PERFORMANCE.md). The layers' own builds write theirs beside the sources (their Makefiles).
unexport PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX ?= $(CURDIR)/.cache/pycache
# Installers run without it: pip records the bytecode it compiles in a package's RECORD, and
# entries under the prefix lie outside the environment (uv warns about them on every upgrade).
INSTALL := env -u PYTHONPYCACHEPREFIX

.PHONY: help venv locks check-lowest check-pythons getting-started-check dynamodb-local lint template-lint scan build check check-tests test suite soak test-py313 demo sam-local protobuf dist docs docs-build docs-site starter-check clean

help:
	@echo "targets: venv dynamodb-local lint template-lint build check test soak test-py313 demo"
	@echo "         sam-local dist starter-check docs docs-site docs-build scan protobuf locks"
	@echo "         check-lowest check-pythons getting-started-check clean"
	@echo "  check: lint beside the tests that start no process (no Java, no sam build), Hypothesis's"
	@echo "         \"check\" profile; within a minute"
	@echo "  test:  every test (what CI runs), chaos and fuzzing at suite volume; within four minutes"
	@echo "  soak:  the long runs: chaos at 3,000 deliveries, fuzzing at 500 examples per source,"
	@echo "         the batch semantics against their model at 300 examples, the zoo of broken"
	@echo "         consumers and the invoices example on 50 seeds, the zoo on DynamoDB Local on"
	@echo "         every source, the deadline races on the wall clock, the decoders' bounds at"
	@echo "         1,000 examples, a Kinesis aggregate of 150,000 user records (SOAK_* variables"
	@echo "         raise them; CI runs it)"
	@echo "  docs:  the documentation site on http://127.0.0.1:8000/lambda-inbox/ (docs-site: built with"
	@echo "         --strict and its HTML checked; docs-build: also every page in headless Chromium)"
	@echo "  starter-check: a project of each kind from starter/, its own make test and make validate"
	@echo "  dist:  lambda-inbox and lambda-inbox-tools, sdist and wheel each, in dist/, twine check"
	@echo "         --strict, their contents and published requirements checked"
	@echo "  locks: the layers' locks (pinned, with hashes) made again from pyproject.toml; needs PyPI"
	@echo "  check-lowest: make check's tests at the lowest versions pyproject.toml allows"
	@echo "  check-pythons: make check's tests on Python 3.11 (Debian's 3.11.2), 3.12 and 3.13"
	@echo "  getting-started-check: docs/getting-started.md followed word for word in a fresh folder"
	@echo "  scan:  checkov on template.yaml, bandit on the library, the functions and the tools"
	@echo "  sam-local: the functions in containers with sam local invoke and start-lambda, offline"
	@echo "             (installs docker.io and debootstrap with apt when missing; needs root)"

venv: $(STAMP)

# uv resolves and installs the development environment in seconds where pip takes a minute: the
# library and the tools editable (with every extra the suite uses), devkit, and the `dev`
# dependency group (pyproject.toml: the test tools, linters, SAM CLI; never published); pip,
# setuptools and wheel are installed with them, for the tools that call them. The virtualenv
# starts without pip (ensurepip alone took 6 of a fresh clone's seconds): uv goes in with the
# interpreter's own pip (`pip --python`), or with ensurepip's where the interpreter has none.
DEV_EDITABLES := -e '.[boto3,kafka-codecs]' -e './tools[cli,local,kafka-replay,testing]' -e ./devkit

$(STAMP): pyproject.toml tools/pyproject.toml devkit/pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv --without-pip $(VENV)
	@echo "installing the development environment into $(VENV) (uv; the package list: $(BIN)/uv pip list)"
	@$(INSTALL) $(PYTHON) -m pip --python $(BIN)/python install --quiet 'uv>=0.8' 2>/dev/null \
		|| { $(BIN)/python -m ensurepip --default-pip >/dev/null \
		&& $(INSTALL) $(BIN)/python -m pip install --quiet 'uv>=0.8'; }
	@$(INSTALL) $(BIN)/uv pip install --quiet --python $(BIN)/python --upgrade-package pip \
		--upgrade-package setuptools --upgrade-package wheel pip setuptools wheel \
		$(DEV_EDITABLES) --group dev
	@touch $(STAMP)

dynamodb-local:
	bash scripts/fetch-dynamodb-local.sh

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict layers/inbox/lambda_inbox tools/lambda_inbox_tools
	@# Each function is its own root (as in Lambda), so check each app.py with its folder on the path.
	@for app in functions/*/app.py; do \
		echo "mypy $$app"; \
		MYPYPATH="layers/inbox:$$(dirname $$app)" $(BIN)/mypy "$$app" || exit 1; \
	done
	@# devkit is strict (pyproject.toml); tests, the demo and the benchmarks use the defaults.
	$(BIN)/mypy tests devkit scripts benchmarks

# Both ways the template deploys: with the defaults (AWS managed keys, no MSK; `sam validate
# --lint` is cfn-lint's default rules) and with a customer-managed key, concurrency limits and an
# MSK cluster; then Getting started's SAM template (assembled from the page's `template.yaml`
# blocks) and the docs' CloudFormation snippets (one cfn-lint run);
# then every inbox of the templates keeps its records as long as its queue and DLQ keep a message.
GETTING_STARTED_TEMPLATE := .cache/getting-started/template.yaml

template-lint: venv
	$(BIN)/sam validate --lint --template-file template.yaml
	$(BIN)/cfn-lint template.yaml --parameters $(TEMPLATE_VARIANT)
	$(BIN)/python -m devkit.doc_snippets docs/getting-started.md template.yaml $(GETTING_STARTED_TEMPLATE)
	$(BIN)/sam validate --lint --template-file $(GETTING_STARTED_TEMPLATE)
	$(BIN)/cfn-lint docs/snippets/inbox-dashboard.yaml docs/snippets/outbox-relay-policy.yaml
	$(BIN)/python scripts/check_retention.py

TEMPLATE_VARIANT := \
	MskSchemaRegistryUri=arn:aws:glue:us-east-1:123456789012:registry/payments MskSchemaValidation=KEY_AND_VALUE \
	KmsKeyArn=arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab \
	SqsMaximumConcurrency=50 ReservedConcurrency=10 PowertoolsLayer=managed ManagedPowertoolsVersion=latest \
	MskClusterArn=arn:aws:kafka:us-east-1:123456789012:cluster/payments/abcd1234-ab12-cd34-ef56-abcdef123456-1

# The security scanners, pinned in scripts/scanners.txt, in a virtualenv of their own (checkov's
# dependencies would fight SAM CLI's). Every finding is fixed or skipped in place with its reason:
# checkov skips in the resources' Metadata, bandit's `# nosec BXXX` (docs/security.md).
SCAN_VENV := .venv-scan
SCAN_STAMP := $(SCAN_VENV)/.installed-stamp

$(SCAN_STAMP): scripts/scanners.txt
	@test -x $(SCAN_VENV)/bin/python || $(PYTHON) -m venv $(SCAN_VENV)
	$(INSTALL) $(SCAN_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(INSTALL) $(SCAN_VENV)/bin/python -m pip install --quiet -r scripts/scanners.txt
	@touch $(SCAN_STAMP)

scan: $(SCAN_STAMP)
	$(SCAN_VENV)/bin/checkov --file template.yaml --framework cloudformation --compact --quiet --skip-download
	$(SCAN_VENV)/bin/bandit --quiet --recursive layers/inbox/lambda_inbox functions tools/lambda_inbox_tools

# The two distributions, lambda-inbox (the library) and lambda-inbox-tools (tools/): each one's
# sdist and wheel with `python -m build`, their metadata and README rendering with `twine check
# --strict`, then their file lists and published requirements against devkit/distribution.py.
dist: venv
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/python -m build --outdir dist tools
	$(BIN)/twine check --strict dist/*
	$(BIN)/python scripts/check_dist.py dist

# The documentation site (mkdocs.yml): MkDocs with Material and mkdocstrings, in a virtualenv of
# their own (pinned in docs/requirements.txt). docs-build fails on a broken link or reference
# (--strict), on any page naming something to load from another site, and on any request to
# another host when the pages run in headless Chromium (scripts/check_site.py, --browser).
DOCS_VENV := .venv-docs
DOCS_STAMP := $(DOCS_VENV)/.installed-stamp

$(DOCS_STAMP): docs/requirements.txt
	@test -x $(DOCS_VENV)/bin/python || $(PYTHON) -m venv $(DOCS_VENV)
	$(INSTALL) $(DOCS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(INSTALL) $(DOCS_VENV)/bin/python -m pip install --quiet -r docs/requirements.txt
	@touch $(DOCS_STAMP)

docs-site: venv $(DOCS_STAMP)
	bash scripts/fetch-mermaid.sh
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs build --strict
	$(BIN)/python scripts/check_site.py site

# Every page loaded from loopback in headless Chromium (installed with apt when missing): any
# request to another host fails the build.
docs-build: docs-site
	bash scripts/install-chromium.sh
	PYTHONPATH=$(CURDIR) $(DOCS_VENV)/bin/python scripts/check_site.py --browser site

docs: docs-site
	@echo "serving on http://127.0.0.1:8000/lambda-inbox/ (Ctrl-C stops it)"
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

# The starter (starter/, a cookiecutter template for `sam init --location`): one SQS project
# generated with cookiecutter, one Kafka project with sam init, each running its own `make test`
# and `make validate` without this checkout's virtualenv on PATH (the library from this checkout).
starter-check: venv dynamodb-local
	bash scripts/check_starter.sh

# docs/getting-started.md followed word for word (scripts/check_getting_started.py): its marked
# commands and files in a fresh folder and HOME, with the system's python3 and no virtualenv: the
# clone (of this checkout's HEAD), a new virtualenv, the page's files, their tests, SAM CLI in its
# own environment and `sam validate --lint`, the local stack, an order sent and shown COMPLETED.
getting-started-check: venv
	$(BIN)/python scripts/check_getting_started.py

# sam build needs an interpreter matching the template's runtime (python3.13) on PATH.
build: venv
	@py313="$$(bash scripts/find-python313.sh)"; \
	echo "sam build with $$py313/python3.13"; \
	PATH="$$py313:$$PATH" $(abspath $(BIN))/sam build --template-file template.yaml

# The inner loop: lint beside the tests that start no process (moto, fakes, in-memory AWS), on
# both cores. Hypothesis's "check" profile (tests/conftest.py) caps every property at 30
# examples; fuzzing runs 20 examples per source in memory, 3 on moto; the zoo of broken
# consumers plays seed 0 (tests/unit/tools/testing/test_effectively_once_zoo.py; 2 seeds in `make test`, 50 in
# `make soak`).
check: venv
	@$(MAKE) --no-print-directory -j2 --output-sync=target lint check-tests

CHECK_VOLUMES := HYPOTHESIS_PROFILE=check INBOX_FUZZ_EXAMPLES=20 INBOX_FUZZ_MOTO_EXAMPLES=3 ZOO_SEEDS=1
CHECK_MARKERS := -m "not integration and not build and not soak"

check-tests: venv
	$(CHECK_VOLUMES) $(BIN)/pytest -q -n 2 --dist worksteal $(CHECK_MARKERS)

# Every published floor proven (DEVELOPERS.md, "Dependency ranges"): .venv-lowest, on python3
# (the oldest Python the project supports), with the library and the tools at the lowest
# versions their pyproject.toml files allow for each direct dependency (uv's --resolution
# lowest-direct: what those need at their newest), the `test` group likewise; then
# scripts/check_lowest.py (every floor is what got installed) and make check's tests, in one
# process (pytest 8.0, the kit's floor, collects some parametrized ids differently per xdist
# worker). Not part of make test.
LOWEST_VENV := .venv-lowest
check-lowest: venv
	rm -rf $(LOWEST_VENV)
	$(PYTHON) -m venv --without-pip $(LOWEST_VENV)
	$(INSTALL) $(BIN)/uv pip install --quiet --python $(LOWEST_VENV)/bin/python \
		--resolution lowest-direct $(DEV_EDITABLES) --group test
	$(LOWEST_VENV)/bin/python scripts/check_lowest.py
	$(CHECK_VOLUMES) PYTHONPYCACHEPREFIX=$(CURDIR)/.cache/pycache-lowest \
		$(LOWEST_VENV)/bin/pytest -q -p no:xdist $(CHECK_MARKERS)

# make check's tests on every supported Python, each at the oldest patch release found
# (scripts/find-python.sh: 3.11 is Debian 12's own 3.11.2 where it is there, 3.12 and 3.13 from
# pyenv or PATH), in a virtualenv each (.venv-3.X, made with .venv's uv: DEV_EDITABLES and the
# `test` group) with a bytecode cache each; the lints run once, in `make check`. CI runs it.
CHECK_PYTHONS ?= 3.11 3.12 3.13
check-pythons: venv
	@for minor in $(CHECK_PYTHONS); do \
		python="$$(bash scripts/find-python.sh $$minor)" && venv=".venv-$$minor" && \
		{ test -x "$$venv/bin/python" || "$$python" -m venv --without-pip "$$venv"; } && \
		$(INSTALL) $(BIN)/uv pip install --quiet --python "$$venv/bin/python" $(DEV_EDITABLES) --group test && \
		echo "== make check's tests on $$("$$venv/bin/python" --version) ($$python)" && \
		$(CHECK_VOLUMES) PYTHONPYCACHEPREFIX=$(CURDIR)/.cache/pycache-$$minor \
			"$$venv/bin/pytest" -q -n 2 --dist worksteal $(CHECK_MARKERS) || exit 1; \
	done

# The volumes of the long runs in `make test` (smaller, every assertion kept) and `make soak`.
SUITE_VOLUMES := CHAOS_SUITE_DELIVERIES=1000 CHAOS_SUITE_CRASH_RATE=0.06 INBOX_FUZZ_EXAMPLES=100 ZOO_SEEDS=2
SOAK_CHAOS_DELIVERIES ?= 3000
SOAK_FUZZ_EXAMPLES ?= 500
SOAK_FUZZ_MOTO_EXAMPLES ?= 10
SOAK_STATEFUL_EXAMPLES ?= 30
SOAK_SEMANTICS_EXAMPLES ?= 300
SOAK_ZOO_SEEDS ?= 50
SOAK_DECODING_EXAMPLES ?= 1000

# The lints beside the whole suite on three workers (each starts its own DynamoDB Local): on two
# cores, three keep both busy while tests wait on deadlines, subprocesses and Java, and the lints
# take what the waits leave (a fourth worker finished no sooner and cost 25 to 60 s more CPU:
# docs/PERFORMANCE.md, "The test suite's time").
test: venv dynamodb-local
	@$(MAKE) --no-print-directory -j3 --output-sync=target lint template-lint suite

suite: venv dynamodb-local
	$(SUITE_VOLUMES) $(BIN)/pytest -q -n 3 --dist worksteal -m "not soak"

# The long runs `make test` keeps short (docs/PERFORMANCE.md, "The test suite's time"): the chaos
# test at 3,000 deliveries, the fuzzing at 500 examples per source, the stateful model at 30
# examples, the batch semantics against their reference model at 300 examples, the zoo of broken
# consumers and the invoices example on 50 seeds, the zoo on DynamoDB Local on every source each
# broken consumer is played on (`make test`: each on one of them), and the tests
# marked `soak` (the deadline races on the wall clock, the chaos run's SNS leg, a Kinesis aggregate
# of 150,000 user records), the decoders' bounds at 1,000 examples. Raise them with
# SOAK_CHAOS_DELIVERIES, SOAK_FUZZ_EXAMPLES, SOAK_FUZZ_MOTO_EXAMPLES, SOAK_STATEFUL_EXAMPLES and
# SOAK_SEMANTICS_EXAMPLES.
soak: venv dynamodb-local
	CHAOS_SUITE_DELIVERIES=$(SOAK_CHAOS_DELIVERIES) INBOX_FUZZ_EXAMPLES=$(SOAK_FUZZ_EXAMPLES) \
		INBOX_FUZZ_MOTO_EXAMPLES=$(SOAK_FUZZ_MOTO_EXAMPLES) CHAOS_STATEFUL_EXAMPLES=$(SOAK_STATEFUL_EXAMPLES) \
		BATCH_SEMANTICS_EXAMPLES=$(SOAK_SEMANTICS_EXAMPLES) \
		ZOO_SEEDS=$(SOAK_ZOO_SEEDS) DECODING_FUZZ_EXAMPLES=$(SOAK_DECODING_EXAMPLES) \
		$(BIN)/pytest -q -n 4 --dist worksteal \
		tests/integration/test_chaos.py tests/unit/consumer/test_fuzz_events.py \
		tests/integration/test_stateful_model.py tests/unit/consumer/test_deadline.py \
		tests/unit/tools/testing/test_effectively_once_zoo.py tests/unit/fates/test_batch_semantics.py \
		tests/unit/decoding/test_decoding_fuzz.py tests/unit/sources/test_kpl_fan_out.py \
		tests/integration/kit/test_effectively_once_check.py::test_the_invoices_example_passes_every_seed \
		tests/integration/kit/test_effectively_once_check.py::test_the_zoo_is_caught_on_dynamodb_local_too

# The suite (unit and integration) on the Lambda runtime's Python, in its own virtualenv.
VENV313 := .venv313
test-py313: venv dynamodb-local
	@test -x $(VENV313)/bin/python || "$$(bash scripts/find-python313.sh)/python3.13" -m venv $(VENV313)
	$(INSTALL) $(BIN)/uv pip install --quiet --python $(VENV313)/bin/python $(DEV_EDITABLES) --group test
	$(VENV313)/bin/pytest -q tests/unit tests/integration

# The application of template.yaml on local services with the demo workload (lambda-inbox local
# with devkit.demo, which is not in the wheel); PYTHONPATH makes it run this checkout's library,
# tools and devkit (also in a worktree sharing a .venv).
demo: venv dynamodb-local
	PYTHONPATH=layers/inbox:tools:. $(BIN)/lambda-inbox local --workload devkit.demo.plugin:WORKLOAD $(DEMO_ARGS)

# The functions in containers with the real SAM CLI (`sam local invoke`, `sam local start-lambda`),
# offline: Docker engine, a locally built Lambda image, a derived x86_64 template, DynamoDB Local
# and moto; every sample event invoked and its effects checked. See scripts/sam_local.py.
sam-local: venv dynamodb-local
	$(BIN)/python scripts/sam_local.py

clean:
	rm -rf .aws-sam .aws-sam-local .pytest_cache .mypy_cache .ruff_cache $(SCAN_VENV) $(DOCS_VENV) $(LOWEST_VENV) .venv-3.1? site dist

# payment_captured_pb2.py(i) from payment_captured.proto, by the protoc of grpcio-tools 1.72.0 in
# a throwaway environment: it writes gencode 6.30.0, which the oldest Protobuf runtime the
# kafka-codecs extra allows (6.31.0) and every newer one load; a newer protoc's gencode would be
# refused by older runtimes. tests/unit/app/test_payment_schemas.py fails when the module differs
# from the .proto, or its gencode is newer than that floor.
PROTOC := grpcio-tools==1.72.0
protobuf: venv
	cd functions/payment_events/schemas && $(INSTALL) $(abspath $(BIN))/uv run --quiet --isolated \
		--no-project --with $(PROTOC) python -m grpc_tools.protoc -I. \
		--python_out=. --pyi_out=. payment_captured.proto

# The layers' locks (layers/inbox/requirements.lock, layers/kafka-codecs/requirements.lock) made
# again from pyproject.toml against the package index as it was at LOCKS_AS_OF (default: now;
# each lock names its moment, so `make locks LOCKS_AS_OF=<it>` makes the same file), then
# downloaded with --require-hashes for arm64 and x86_64, Python 3.12 and 3.13; template.yaml's
# ManagedPowertoolsVersion follows the locked Powertools (scripts/update_locks.py). Needs PyPI;
# `make check` fails while a lock is stale (tests/unit/project/test_layer_locks.py).
locks: venv
	$(BIN)/python scripts/update_locks.py $(if $(LOCKS_AS_OF),--as-of $(LOCKS_AS_OF))
