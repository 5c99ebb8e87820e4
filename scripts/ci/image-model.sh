#!/usr/bin/env bash
# action.yml's image mode, the model. `check`: is it baked into the image (`ci_model --cached` in a
# container)? Outputs baked=true|false and, when a catalog model is not (a -nomodel image, another model),
# cache=true, cache-dir (the workspace's .cache/prereview, which the action's cache steps restore and save)
# and key. `fetch`: assemble the model into that cache dir, in the image, the dir mounted at its own path.
# Env: PREREVIEW_IMAGE, PREREVIEW_MODEL (empty = the default), ACTION_PATH, GITHUB_WORKSPACE, GITHUB_OUTPUT;
# fetch: PREREVIEW_CACHE_DIR.
set -euo pipefail
: "${PREREVIEW_IMAGE:?}" "${GITHUB_WORKSPACE:?}"
model="${PREREVIEW_MODEL:-}"
if ! command -v docker >/dev/null; then
  echo "prereview: input image ($PREREVIEW_IMAGE) needs Docker on the runner; install it, or leave image empty to install prereview here" >&2
  exit 2
fi

if [ "${1:-}" = fetch ]; then
  dir="${PREREVIEW_CACHE_DIR:?}"
  # the cache dir sits in the pull request's checkout: a link there (a committed `.cache` -> ~/.ssh)
  # would take the mount and the model's writes outside it, so every part below the workspace is checked
  part="$GITHUB_WORKSPACE"
  for name in $(printf '%s' "${dir#"$GITHUB_WORKSPACE"/}" | tr '/' ' '); do
    part="$part/$name"
    if [ -L "$part" ]; then
      echo "prereview: $part is a link in the checkout; the model is not cached through it (remove it from the pull request)" >&2
      exit 2
    fi
  done
  mkdir -p "$dir"  # the runner's user owns it, not the engine's
  echo '*' > "$dir/.gitignore"  # never part of a later step's `git add -A` in the checkout
  exec docker run --rm --user "$(id -u):$(id -g)" -v "$dir:$dir" -e HOME=/tmp -e PREREVIEW_CACHE_DIR -w "$dir" \
    "$PREREVIEW_IMAGE" python -I -m bot.cli.ci_model "$model"
fi

: "${GITHUB_OUTPUT:?}" "${ACTION_PATH:?}"
case "$model" in hf:*|*.gguf|*/*)
  echo "prereview: $model is read or downloaded by prereview itself (in the container), not cached here"
  echo "baked=false" >> "$GITHUB_OUTPUT"
  exit 0
  ;;
esac
rc=0
docker run --rm "$PREREVIEW_IMAGE" python -I -m bot.cli.ci_model --cached "$model" || rc=$?
case "$rc" in
  0)
    echo "prereview: ${model:-the default model} is baked into $PREREVIEW_IMAGE: used where it is, nothing cached"
    echo "baked=true" >> "$GITHUB_OUTPUT"
    ;;
  1)
    dir="$GITHUB_WORKSPACE/.cache/prereview"
    echo "prereview: ${model:-the default model} is not baked into $PREREVIEW_IMAGE: kept in $dir (cached between runs)"
    catalog_hash="$(sha256sum "$ACTION_PATH/bot/models/catalog.py" | cut -c1-12)"
    {
      echo "baked=false"
      echo "cache=true"
      echo "cache-dir=$dir"
      echo "key=prereview-image-model-${model:-default}-$catalog_hash"
    } >> "$GITHUB_OUTPUT"
    ;;
  *)
    echo "prereview: could not run $PREREVIEW_IMAGE (docker exit $rc); check the image name and that this runner can pull it" >&2
    exit 2
    ;;
esac
