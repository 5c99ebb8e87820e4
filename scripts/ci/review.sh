#!/usr/bin/env bash
# action.yml's review step: `prereview github` with the action's inputs, from the installed venv, or in
# prereview's release image (input `image`: `docker run`, the workspace and the runner's event and output
# files mounted at their own paths, the runner's user, only the variables prereview reads passed by name
# so no value, the token included, is on a command line).
# Env: PREREVIEW_VENV | PREREVIEW_IMAGE (with PREREVIEW_CACHE_DIR where the image lacks the model),
# PREREVIEW_INPUT_* (model, config, fail-level, api-base, n-gpu-layers, args), PREREVIEW_SANDBOX_USERNS
# (auto|allow|deny), and the GITHUB_* the runner sets.
set -euo pipefail
args=()
if [ -n "${PREREVIEW_INPUT_MODEL:-}" ]; then args+=(--model "$PREREVIEW_INPUT_MODEL"); fi
if [ -n "${PREREVIEW_INPUT_CONFIG:-}" ]; then args+=(--config "$PREREVIEW_INPUT_CONFIG"); fi
if [ -n "${PREREVIEW_INPUT_FAIL_LEVEL:-}" ]; then args+=(--fail-level "$PREREVIEW_INPUT_FAIL_LEVEL"); fi
if [ -n "${PREREVIEW_INPUT_API_BASE:-}" ]; then args+=(--api-base "$PREREVIEW_INPUT_API_BASE"); fi
if [ -n "${PREREVIEW_INPUT_N_GPU_LAYERS:-}" ]; then args+=(--n-gpu-layers "$PREREVIEW_INPUT_N_GPU_LAYERS"); fi

if [ -z "${PREREVIEW_IMAGE:-}" ]; then
  # `args` is split like a command line (quotes honoured, nothing expanded), then appended.
  exec "$PREREVIEW_VENV/bin/python" -I -m bot.cli.shellwords PREREVIEW_INPUT_ARGS -- \
    "$PREREVIEW_VENV/bin/prereview" github "${args[@]}"
fi

if ! command -v docker >/dev/null; then
  echo "prereview: input image ($PREREVIEW_IMAGE) needs Docker on the runner; install it, or leave image empty to install prereview here" >&2
  exit 2
fi
: "${GITHUB_WORKSPACE:?}" "${GITHUB_EVENT_PATH:?}"
mounts=(-v "$GITHUB_WORKSPACE:$GITHUB_WORKSPACE")
for f in "$GITHUB_EVENT_PATH" "${GITHUB_OUTPUT:-}" "${GITHUB_STEP_SUMMARY:-}"; do
  if [ -n "$f" ]; then
    d="$(dirname "$f")"
    case " ${mounts[*]} " in *" $d:$d "*) ;; *) mounts+=(-v "$d:$d") ;; esac
  fi
done
envs=(-e HOME=/tmp)
# A model the image does not bake in: the workspace's cache dir (image-model.sh), mounted at its own path.
if [ -n "${PREREVIEW_CACHE_DIR:-}" ]; then
  mounts+=(-v "$PREREVIEW_CACHE_DIR:$PREREVIEW_CACHE_DIR")
  envs+=(-e PREREVIEW_CACHE_DIR)
fi
for name in CI GITHUB_ACTIONS GITHUB_EVENT_NAME GITHUB_EVENT_PATH GITHUB_REPOSITORY GITHUB_API_URL \
  GITHUB_SERVER_URL GITHUB_GRAPHQL_URL GITHUB_WORKSPACE GITHUB_OUTPUT GITHUB_STEP_SUMMARY GITHUB_SHA \
  GITHUB_REF GITHUB_RUN_ID GITHUB_TOKEN PREREVIEW_INPUT_ARGS PREREVIEW_TEST_COMMAND PREREVIEW_TESTS_PYTHON \
  PREREVIEW_SANDBOX_OFF; do
  if [ -n "${!name+x}" ]; then envs+=(-e "$name"); fi
done
# bubblewrap inside the container needs user namespaces and an unmasked /proc: granted on GitHub-hosted
# runners (throwaway VMs) or when asked (sandbox-userns: allow); otherwise the review says the sandbox is off.
relax="${PREREVIEW_SANDBOX_USERNS:-auto}"
if [ "$relax" = auto ]; then
  relax=deny
  if [ "${RUNNER_ENVIRONMENT:-}" = github-hosted ]; then relax=allow; fi
fi
sec=()
if [ "$relax" = allow ]; then
  sec=(--security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined)
fi
echo "prereview: reviewing in $PREREVIEW_IMAGE"
exec docker run --rm --user "$(id -u):$(id -g)" "${sec[@]}" "${mounts[@]}" "${envs[@]}" \
  -w "$GITHUB_WORKSPACE" "$PREREVIEW_IMAGE" \
  python -I -m bot.cli.shellwords PREREVIEW_INPUT_ARGS -- prereview github "${args[@]}"
