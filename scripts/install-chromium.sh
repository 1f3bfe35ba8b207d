#!/usr/bin/env bash
# Chromium for `make docs-build`'s browser check (scripts/check_site.py --browser): Debian's
# `chromium` package, installed with apt when missing (needs root).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "chromium not found: install Debian's chromium package (apt-get install chromium)" >&2
  exit 1
fi
echo "chromium not found: installing it with apt"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
