#!/usr/bin/env bash
# Print the bin/ folder of a CPython 3.13 interpreter (sam build needs one matching the template's
# runtime on PATH). Looks at pyenv's 3.13 (also when pyenv itself is not on PATH), then at a working
# `python3.13` on PATH, and otherwise fails with what to install.
set -euo pipefail

if command -v pyenv >/dev/null 2>&1 && prefix="$(pyenv prefix 3.13.0 2>/dev/null)"; then
  echo "$prefix/bin"
  exit 0
fi
for candidate in "${PYENV_ROOT:-${HOME:-/root}/.pyenv}"/versions/3.13*/bin/python3.13 /root/.pyenv/versions/3.13*/bin/python3.13; do
  if [[ -x "$candidate" ]]; then
    dirname "$candidate"
    exit 0
  fi
done
# A python3.13 on PATH, if it runs (a pyenv shim without 3.13 selected does not).
if command -v python3.13 >/dev/null 2>&1 && python3.13 -c "" >/dev/null 2>&1; then
  dirname "$(command -v python3.13)"
  exit 0
fi
echo "error: sam build needs Python 3.13 (install it with 'pyenv install 3.13.0' or put python3.13 on PATH)" >&2
exit 1
