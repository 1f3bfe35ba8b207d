#!/usr/bin/env bash
# Screenshots of the built site (make docs-build) in headless Chromium (Debian's `chromium`),
# served from site/ on a loopback port: the front page, the API reference and the architecture
# page with its diagram. Usage: bash scripts/screenshot_site.sh [OUT_DIR]   (default: site-shots)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/site-shots}"
command -v chromium >/dev/null || { echo "error: chromium missing (apt-get install chromium)" >&2; exit 1; }
[[ -f "$ROOT/site/index.html" ]] || { echo "error: site/ not built: make docs-build" >&2; exit 1; }
mkdir -p "$OUT"
port=8765
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$ROOT/site" >/dev/null 2>&1 &
server=$!
trap 'kill $server' EXIT
sleep 1
shoot() {  # name path height
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="1400,$3" \
    --virtual-time-budget=8000 --screenshot="$OUT/$1.png" "http://127.0.0.1:$port/$2" 2>&1 | grep -v "^\[\|unexpected operator" || true
}
shoot front-page "" 1000
shoot api-reference "reference/library/" 1000
shoot architecture-diagram "architecture/" 2300
ls -l "$OUT"
