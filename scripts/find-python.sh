#!/usr/bin/env bash
# Print the path of a CPython interpreter of the minor version given (`3.11`, `3.12`, `3.13`):
# the OLDEST patch release found among pyenv's versions (also when pyenv itself is not on PATH),
# /usr/bin and PATH, so that each supported minor is tested at its floor where one is at hand
# (3.11: Debian 12's own 3.11.2 before pyenv's 3.11.7). Fails with what to install otherwise.
set -euo pipefail

minor="${1:?usage: find-python.sh 3.X}"
candidates=()
for root in "${PYENV_ROOT:-${HOME:-/root}/.pyenv}" /root/.pyenv; do
  for found in "$root"/versions/"$minor".*/bin/python"$minor"; do
    [[ -x "$found" ]] && candidates+=("$found")
  done
done
for found in "/usr/bin/python$minor" "$(command -v "python$minor" 2>/dev/null || true)"; do
  [[ -n "$found" && -x "$found" ]] && candidates+=("$found")
done
best="" best_version=""
for candidate in "${candidates[@]}"; do
  # A pyenv shim without the version selected does not run: skip it.
  version="$("$candidate" -c 'import sys; print("%d.%d.%05d" % sys.version_info[:3])' 2>/dev/null)" || continue
  [[ "$version" == "$minor".* ]] || continue
  if [[ -z "$best" || "$version" < "$best_version" ]]; then
    best="$candidate" best_version="$version"
  fi
done
if [[ -z "$best" ]]; then
  echo "error: no Python $minor found (install it with 'pyenv install $minor' or your system's packages)" >&2
  exit 1
fi
echo "$best"
