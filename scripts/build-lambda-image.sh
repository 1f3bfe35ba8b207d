#!/usr/bin/env bash
# Build a local stand-in for the AWS Lambda Python 3.13 x86_64 base image, for
# `sam local invoke --invoke-image` / `sam local start-lambda --invoke-image` on a machine that
# cannot pull images. Built once: does nothing when the image exists with the current recipe.
#
#   1. debootstrap --variant=minbase --include=python3 of Debian trixie (CPython 3.13, the
#      template's runtime) from the apt mirror this machine is configured with;
#   2. awslambdaric and boto3 (cp313, manylinux x86_64 wheels) into /var/runtime, compiled;
#   3. /var/runtime/bootstrap: runs `python3.13 -m awslambdaric "$_HANDLER"` with Lambda's paths
#      (SAM CLI mounts its own Runtime Interface Emulator, which starts /var/runtime/bootstrap);
#   4. `tar -C rootfs -c . | docker import -`.
#
# Usage: scripts/build-lambda-image.sh [--force] [IMAGE]
#   IMAGE     default $LAMBDA_IMAGE or lambda-inbox/python:3.13-x86_64-local
#   --force   build again even when the image exists
# Environment:
#   PYTHON         runs pip (default: the Python 3.13 of scripts/find-python313.sh, else python3)
#   DEBIAN_MIRROR  default: the Debian archive in /etc/apt/sources.list or sources.list.d/
#   CACHE_DIR      downloaded .debs are kept there (default <repo>/.cache/sam-local)
# Needs root (debootstrap, chroot) and a running Docker engine.
set -euo pipefail

# Bump when the way the image is built changes: an image with another recipe is rebuilt.
RECIPE=1
SUITE=trixie
LABEL=org.lambda-inbox.image-recipe

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
force=0
image="${LAMBDA_IMAGE:-lambda-inbox/python:3.13-x86_64-local}"
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    -*) echo "usage: $0 [--force] [IMAGE]" >&2; exit 2 ;;
    *) image="$arg" ;;
  esac
done
# pip runs with a Python 3.13 when there is one (no unrelated packages to report conflicts with).
PYTHON="${PYTHON:-$(bash "$ROOT/scripts/find-python313.sh" 2>/dev/null || true)/python3.13}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
CACHE_DIR="${CACHE_DIR:-$ROOT/.cache/sam-local}"

log() { echo "image: $*"; }

if ! docker info >/dev/null 2>&1; then
  echo "error: no Docker engine answers on ${DOCKER_HOST:-unix:///var/run/docker.sock}" >&2
  exit 1
fi

if [[ $force -eq 0 ]] && built="$(docker image inspect --format "{{ index .Config.Labels \"$LABEL\" }}" "$image" 2>/dev/null)"; then
  if [[ "$built" == "$RECIPE" ]]; then
    log "$image exists (recipe $RECIPE): reused"
    exit 0
  fi
  log "$image exists with recipe '${built}', current is $RECIPE: rebuilding"
fi

# The first Debian archive (not security, not a third-party repository) in the apt sources.
debian_mirror() {
  local file uri
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$file" ]] || continue
    # One-line format: deb [options] URI SUITE COMPONENT...
    uri="$(awk '$1 == "deb" {
        i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
        if ($(i+1) !~ /-security$/ && $(i+1) ~ /^(buster|bullseye|bookworm|trixie|forky|sid|stable|testing|unstable|oldstable)(-updates)?$/) { print $i; exit }
      }' "$file")"
    [[ -n "$uri" ]] && { echo "$uri"; return 0; }
  done
  for file in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$file" ]] || continue
    # deb822 format: stanzas of "Field: value" lines separated by blank lines.
    uri="$(awk '
        function flush() {
          if (types ~ /(^| )deb( |$)/ && suites ~ /(^| )(buster|bullseye|bookworm|trixie|forky|sid|stable|testing|unstable|oldstable)( |$)/ && uris != "") {
            split(uris, u, " "); print u[1]; found = 1; exit
          }
          types = ""; suites = ""; uris = ""
        }
        /^[[:space:]]*#/ { next }
        /^[[:space:]]*$/ { flush(); next }
        tolower($1) == "types:" { $1 = ""; types = $0 " " }
        tolower($1) == "suites:" { $1 = ""; suites = $0 " " }
        tolower($1) == "uris:" { $1 = ""; sub(/^ +/, ""); uris = $0 }
        END { if (!found) flush() }
      ' "$file")"
    [[ -n "$uri" ]] && { echo "$uri"; return 0; }
  done
  return 1
}

mirror="${DEBIAN_MIRROR:-}"
if [[ -z "$mirror" ]] && ! mirror="$(debian_mirror)"; then
  echo "error: no Debian mirror found in /etc/apt/sources.list{,.d/}; set DEBIAN_MIRROR" >&2
  exit 1
fi

bash "$ROOT/scripts/install-sam-local-packages.sh" debootstrap
if [[ ! -e "/usr/share/debootstrap/scripts/$SUITE" ]]; then
  echo "error: this debootstrap does not know Debian $SUITE (/usr/share/debootstrap/scripts/$SUITE)" >&2
  exit 1
fi

mkdir -p "$CACHE_DIR/debootstrap-debs"
work="$(mktemp -d /var/tmp/lambda-image.XXXXXX)"
rootfs="$work/rootfs"
cleanup() {
  # debootstrap mounts /proc and /sys inside the root file system while it runs: unmount
  # whatever is still mounted there before deleting, and never cross into another file system.
  local mounts
  mounts="$(awk -v prefix="$rootfs/" 'index($2, prefix) == 1 { print $2 }' /proc/mounts | sort -r)"
  [[ -z "$mounts" ]] || echo "$mounts" | xargs -r -n1 umount -l || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

started=$SECONDS
log "debootstrap $SUITE (minbase + python3) from $mirror"
if ! debootstrap --variant=minbase --include=python3 --cache-dir="$CACHE_DIR/debootstrap-debs" \
  "$SUITE" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1; then
  tail -n 30 "$work/debootstrap.log" >&2
  [[ -f "$rootfs/debootstrap/debootstrap.log" ]] && tail -n 30 "$rootfs/debootstrap/debootstrap.log" >&2
  echo "error: debootstrap of $SUITE from $mirror failed" >&2
  exit 1
fi
log "debootstrap done in $((SECONDS - started)) s"
if ! chroot "$rootfs" python3.13 -c 'import sys; assert sys.version_info[:2] == (3, 13)'; then
  echo "error: Debian $SUITE did not install a working python3.13" >&2
  exit 1
fi

step=$SECONDS
log "pip install awslambdaric boto3 (cp313 manylinux2014_x86_64) into /var/runtime"
if ! "$PYTHON" -m pip install --disable-pip-version-check --no-compile \
  --platform manylinux2014_x86_64 --implementation cp --python-version 3.13 --only-binary=:all: \
  --target "$rootfs/var/runtime" awslambdaric boto3 >"$work/pip.log" 2>&1; then
  tail -n 30 "$work/pip.log" >&2
  echo "error: pip install of awslambdaric and boto3 failed" >&2
  exit 1
fi
# Lambda's runtime directory holds compiled modules: compile them with the image's interpreter.
chroot "$rootfs" python3.13 -m compileall -q -j 1 --invalidation-mode unchecked-hash /var/runtime >/dev/null
log "pip done in $((SECONDS - step)) s"

cat >"$rootfs/var/runtime/bootstrap" <<'EOF'
#!/bin/sh
# Lambda Python runtime bootstrap, started by the Runtime Interface Emulator (SAM CLI mounts it).
export LAMBDA_TASK_ROOT=/var/task
export LAMBDA_RUNTIME_DIR=/var/runtime
export PYTHONPATH=/var/task:/opt/python/lib/python3.13/site-packages:/opt/python:/var/runtime
cd /var/task
exec /usr/bin/python3.13 -m awslambdaric "$_HANDLER"
EOF
chmod 755 "$rootfs/var/runtime/bootstrap"
mkdir -p "$rootfs/var/task" "$rootfs/opt"

# Smaller image: no package caches, documentation or translations.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*

step=$SECONDS
log "docker import as $image"
tar -C "$rootfs" --numeric-owner -c . | docker import \
  --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  --change "ENV LANG=C.UTF-8" \
  --change "ENV LAMBDA_TASK_ROOT=/var/task" \
  --change "ENV LAMBDA_RUNTIME_DIR=/var/runtime" \
  --change "WORKDIR /var/task" \
  --change "ENTRYPOINT [\"/var/runtime/bootstrap\"]" \
  --change "LABEL $LABEL=$RECIPE" \
  --message "lambda-inbox: local stand-in for the Lambda python3.13 x86_64 image" \
  - "$image" >/dev/null
log "$image built in $((SECONDS - started)) s (import $((SECONDS - step)) s, $(docker image inspect --format '{{.Size}}' "$image" | awk '{ printf "%.0f MB", $1 / 1e6 }'))"
