#!/usr/bin/env bash
# `make starter-check`: generate one project of each kind from starter/ (the cookiecutter
# template `sam init --location` uses), then run each one's own `make validate` (sam validate
# --lint) and `make test` (its tests with the testing kit) against the wheel `make dist` built,
# installed in a fresh virtualenv shared by both projects.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="$("$ROOT/.venv/bin/python" -c 'import lambda_inbox; print(lambda_inbox.__version__)')"
WHEEL="$ROOT/dist/lambda_inbox-$VERSION-py3-none-any.whl"
[[ -f "$WHEEL" ]] || { echo "error: $WHEEL missing: run make dist first" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The generated tests fetch DynamoDB Local on first use; this checkout's copy spares the fetch.
export DYNAMODB_LOCAL_DIR="$ROOT/.cache/dynamodb-local"
export SAM_CLI_TELEMETRY=0

for kind in sqs kafka; do
  echo "== starter: $kind"
  "$ROOT/.venv/bin/cookiecutter" --no-input "$ROOT/starter" -o "$work/$kind" \
    event_source="$kind" project_name="Order totals"
  project="$work/$kind/order-totals"
  make -C "$project" validate SAM="$ROOT/.venv/bin/sam"
  make -C "$project" test VENV="$work/venv" LAMBDA_INBOX="$WHEEL[testing]"
done
echo "starter: both kinds generated, validated and tested"
