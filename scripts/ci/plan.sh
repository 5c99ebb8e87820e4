#!/usr/bin/env bash
# action.yml's first step: where things are installed and the cache keys, as step outputs.
# Every key carries what invalidates it: the runner (os-arch), the Python setup-python resolved (not
# the input string), the llama-cpp-python version and build, and a hash of this action's own files
# (so a new prereview release gets a new venv; `github.action_ref` cannot do that, see action.yml).
# Inputs (env): ACTION_PATH, PYTHON_PATH, PYTHON_VERSION, MODEL, API_BASE, LLAMA_BUILD, RUNNER_KEY,
# BASE_SHA and WORKSPACE (the test environments' key).
set -euo pipefail
: "${ACTION_PATH:?}" "${GITHUB_OUTPUT:?}"
root="$ACTION_PATH"
python="${PYTHON_PATH:-$(command -v python3)}"
pyver="${PYTHON_VERSION:-$("$python" -I -c 'import platform; print(platform.python_version())')}"
build="${LLAMA_BUILD:-cpu}"
case "$build" in cpu|cpu-all|cuda) ;; *) echo "prereview: llama-build must be cpu, cpu-all or cuda (got '$build')" >&2; exit 2 ;; esac
llama_version="$(sed -n 's/^llama = \["llama-cpp-python==\([^"]*\)"\]/\1/p' "$root/pyproject.toml")"
src_hash="$(cd "$root" && find action.yml pyproject.toml bot scripts/ci -type f ! -name '*.pyc' ! -path '*/__pycache__/*' \
  | LC_ALL=C sort | xargs -d '\n' sha256sum | sha256sum | cut -c1-16)"
catalog_hash="$(sha256sum "$root/bot/models/catalog.py" | cut -c1-12)"
base="${PREREVIEW_ACTION_HOME:-$HOME/.cache/prereview-action}"
llama=1; [ -n "${API_BASE:-}" ] && llama=0
extras="github"; case "${MODEL:-}" in hf:*) extras="github,hf" ;; esac
# Catalog models are assembled into the cache dir once; a .gguf path or hf: model is not ours to cache.
model_cacheable=0
if [ "$llama" = 1 ]; then case "${MODEL:-}" in hf:*|*.gguf|*/*) ;; *) model_cacheable=1 ;; esac; fi
runner="${RUNNER_KEY:-$(uname -s)-$(uname -m)}"
# The project's test environments are built from the BASE revision's dependency files: their hash keys
# the cache (no base in the checkout, e.g. a comment event: one shared "nobase" entry).
deps="nobase"
if [ -n "${BASE_SHA:-}" ] && [ -n "${WORKSPACE:-}" ] && git -C "$WORKSPACE" cat-file -e "$BASE_SHA^{commit}" 2>/dev/null; then
  deps="$(git -C "$WORKSPACE" ls-tree --name-only "$BASE_SHA" | LC_ALL=C sort \
    | { grep -E '^(pyproject\.toml|setup\.(py|cfg)|requirements.*\.txt|constraints.*\.txt|uv\.lock|poetry\.lock|Pipfile(\.lock)?|tox\.ini|noxfile\.py|package(-lock)?\.json|go\.(mod|sum)|Cargo\.(toml|lock))$' || true; } \
    | while read -r f; do printf '%s %s\n' "$f" "$(git -C "$WORKSPACE" show "$BASE_SHA:$f" | sha256sum | cut -c1-16)"; done \
    | sha256sum | cut -c1-16)"
fi
flavour="llama$llama_version-$build"; [ "$llama" = 0 ] && flavour="api"
{
  echo "python=$python"
  echo "llama=$llama"
  echo "extras=$extras"
  echo "venv=$base/venv"
  echo "wheelhouse=$base/wheels-$build"
  echo "cache-dir=$base/cache"
  echo "models=$base/cache/models"
  echo "envs=$base/envs"
  echo "envs-key=prereview-envs-$runner-py$pyver-$deps"
  echo "model-cacheable=$model_cacheable"
  echo "wheel-key=prereview-wheel-$runner-py$pyver-llama$llama_version-$build-portable2"
  echo "venv-key=prereview-venv-$runner-py$pyver-$flavour-${extras//,/+}-$src_hash"
  echo "model-key=prereview-model-$runner-${MODEL:-default}-$catalog_hash"
} >> "$GITHUB_OUTPUT"
echo "prereview: Python $pyver ($python), $flavour, action files $src_hash"
