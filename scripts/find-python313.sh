#!/usr/bin/env bash
# Print the bin/ folder of a CPython 3.13 interpreter (sam build needs one matching the template's
# runtime on PATH): scripts/find-python.sh's, which fails with what to install when there is none.
set -euo pipefail
dirname "$(bash "$(dirname "${BASH_SOURCE[0]}")/find-python.sh" 3.13)"
