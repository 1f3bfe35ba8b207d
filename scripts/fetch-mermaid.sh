#!/usr/bin/env bash
# Fetch Mermaid's browser bundle from the npm package `mermaid` into the documentation site, so
# the site serves it itself: Material for MkDocs loads Mermaid from a CDN only when no `mermaid`
# global exists, and mkdocs.yml's extra_javascript provides one. The major version is the one the
# theme's loader names (mermaid@11). Idempotent; the file is not committed (.gitignore).
set -euo pipefail

VERSION="${MERMAID_NPM_VERSION:-11.17.2}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="$ROOT/docs/assets/javascripts/mermaid.min.js"
STAMP="$ROOT/.cache/mermaid.version"

if [[ -f "$TARGET" && "$(cat "$STAMP" 2>/dev/null)" == "$VERSION" ]]; then
  echo "mermaid $VERSION already in docs/assets/javascripts"
  exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "error: npm is needed to fetch mermaid" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "Fetching mermaid@$VERSION with npm pack"
(cd "$work" && npm pack --silent "mermaid@$VERSION" >/dev/null)
tar -xzf "$work"/mermaid-*.tgz -C "$work" package/dist/mermaid.min.js
mkdir -p "$(dirname "$TARGET")" "$(dirname "$STAMP")"
cp "$work/package/dist/mermaid.min.js" "$TARGET"
echo "$VERSION" > "$STAMP"
echo "mermaid $VERSION -> docs/assets/javascripts/mermaid.min.js"
