#!/usr/bin/env bash
# `make starter-check`: generate one project of each kind from starter/ as a new user would (the
# SQS one with `cookiecutter --no-input`, the Kafka one with `sam init --location`), then run
# each one's own `make test` and `make validate` with nothing overridden, in a shell without this
# checkout's virtualenv on PATH: each project makes its own .venv with lambda-inbox installed from
# this checkout (it is not on the package index yet), its testing kit and SAM CLI.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The generated tests fetch DynamoDB Local on first use; this checkout's copy spares the fetch.
export DYNAMODB_LOCAL_DIR="$ROOT/.cache/dynamodb-local"
export SAM_CLI_TELEMETRY=0
# PATH without any virtualenv (this checkout's .venv included); no cache prefix or pythonpath of
# this repository's Makefile leaks into the projects.
clean_path="$(tr ':' '\n' <<<"$PATH" | grep -v -e '/\.venv[^/]*/bin$' -e "^$ROOT" | paste -sd:)"
unset PYTHONPYCACHEPREFIX PYTHONPATH VIRTUAL_ENV

echo "== starter: sqs (cookiecutter --no-input)"
(cd "$work" && "$ROOT/.venv/bin/cookiecutter" --no-input "$ROOT/starter" -o sqs \
  project_name="Order totals" event_source=sqs)
echo "== starter: kafka (sam init --location)"
(cd "$work" && "$ROOT/.venv/bin/sam" init --location "$ROOT/starter" --no-input --output-dir kafka \
  --extra-context '{"project_name": "Order totals", "event_source": "kafka"}')

for kind in sqs kafka; do
  project="$work/$kind/order-totals"
  echo "== starter: $kind: make test, make validate (PATH without a virtualenv)"
  (cd "$project" && PATH="$clean_path" make test && PATH="$clean_path" make validate)
done
echo "starter: both kinds generated, tested and validated on their own"
