#!/usr/bin/env bash
# Install from apt what `make sam-local` needs on the host and does not find there:
#   dockerd      Debian's docker.io (the container engine `sam local` drives)
#   debootstrap  builds the root file system of the local Lambda image (scripts/build-lambda-image.sh)
# Idempotent: nothing is installed (and apt is not even updated) when both are present.
# Usage: scripts/install-sam-local-packages.sh [dockerd] [debootstrap]   (default: both)
set -euo pipefail

wanted=("$@")
[[ ${#wanted[@]} -gt 0 ]] || wanted=(dockerd debootstrap)

missing=()
for tool in "${wanted[@]}"; do
  case "$tool" in
    dockerd) command -v dockerd >/dev/null 2>&1 || missing+=(docker.io) ;;
    debootstrap) command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap) ;;
    *) echo "error: unknown tool '$tool' (dockerd, debootstrap)" >&2; exit 2 ;;
  esac
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "apt: ${wanted[*]} already installed"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "error: ${missing[*]} missing and not running as root: install them with apt-get" >&2
  exit 1
fi

echo "apt: installing ${missing[*]}"
started=$SECONDS
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "apt: ${missing[*]} installed in $((SECONDS - started)) s"
