#!/usr/bin/env bash
# Install the whole prereview pipeline into one venv: prereview (+ its scanners bandit, detect-secrets),
# llama-cpp-python from a portable wheel (built once into a wheelhouse, reused from there), and semgrep
# in its own venv (its pins clash with ours), linked into prereview's. Used by action.yml, the GitLab
# template and the Dockerfile; every input is an environment variable:
#   PREREVIEW_SPEC        what pip installs for prereview, without extras (a path, a pinned name, a URL)
#   PREREVIEW_EXTRAS      comma-separated extras (github, gitlab, hf); scanners is always added
#   PREREVIEW_VENV        the venv to create or complete (absolute path; cached as a whole by the callers)
#   PREREVIEW_PYTHON      the interpreter that creates it (default python3)
#   PREREVIEW_WHEELHOUSE  where the llama-cpp-python wheel is built and found (cached by the callers)
#   PREREVIEW_LLAMA       1 = in-process model (llama-cpp-python), 0 = a model server (api-base)
#   PREREVIEW_LLAMA_BUILD cpu (portable x86-64-v3), cpu-all (every x86 variant) or cuda: llama-wheel.sh
#   PREREVIEW_LLAMA_VERSION  llama-cpp-python version (default: the pin in pyproject.toml next to this file)
#   PREREVIEW_SEMGREP_VERSION  semgrep version (default: the Makefile's pin)
#   PREREVIEW_SEMGREP     an installed semgrep to link instead of installing one (a self-hosted runner's)
set -euo pipefail
export SEMGREP_ENABLE_VERSION_CHECK=0  # else `semgrep --version` waits ~100 s on egress-filtered runners
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$(dirname "$here")")"
: "${PREREVIEW_VENV:?set PREREVIEW_VENV to the venv to install into}"
: "${PREREVIEW_SPEC:=$root}"
: "${PREREVIEW_EXTRAS:=}"
: "${PREREVIEW_PYTHON:=python3}"
: "${PREREVIEW_LLAMA:=1}"
: "${PREREVIEW_LLAMA_BUILD:=cpu}"
: "${PREREVIEW_WHEELHOUSE:=$PREREVIEW_VENV.wheels}"
if [ -z "${PREREVIEW_LLAMA_VERSION:-}" ]; then
  PREREVIEW_LLAMA_VERSION="$(sed -n 's/^llama = \["llama-cpp-python==\([^"]*\)"\]/\1/p' "$root/pyproject.toml" 2>/dev/null || true)"
fi
if [ -z "${PREREVIEW_SEMGREP_VERSION:-}" ]; then
  PREREVIEW_SEMGREP_VERSION="$(sed -n 's/.*semgrep==\([0-9.]*\).*/\1/p' "$root/Makefile" 2>/dev/null | head -1)"
fi
: "${PREREVIEW_LLAMA_VERSION:?cannot tell the llama-cpp-python version; set PREREVIEW_LLAMA_VERSION}"
: "${PREREVIEW_SEMGREP_VERSION:?cannot tell the semgrep version; set PREREVIEW_SEMGREP_VERSION}"
pip_flags=(--disable-pip-version-check --quiet)
t0=$SECONDS
say() { echo "prereview-install: $*"; }

[ -x "$PREREVIEW_VENV/bin/python" ] || "$PREREVIEW_PYTHON" -I -m venv "$PREREVIEW_VENV"
py="$PREREVIEW_VENV/bin/python"

extras="scanners"
[ -n "$PREREVIEW_EXTRAS" ] && extras="$PREREVIEW_EXTRAS,scanners"
find_links=()
if [ "$PREREVIEW_LLAMA" = 1 ]; then
  extras="$extras,llama"
  PREREVIEW_LLAMA_VERSION="$PREREVIEW_LLAMA_VERSION" PREREVIEW_LLAMA_BUILD="$PREREVIEW_LLAMA_BUILD" \
    PREREVIEW_WHEELHOUSE="$PREREVIEW_WHEELHOUSE" PREREVIEW_BUILD_PYTHON="$py" bash "$here/llama-wheel.sh"
  find_links=(--find-links "$PREREVIEW_WHEELHOUSE")
fi

spec="$PREREVIEW_SPEC[$extras]"
say "pip install $spec"
t1=$SECONDS
"$py" -I -m pip install "${pip_flags[@]}" "${find_links[@]}" "$spec"
say "prereview and its scanners installed in $((SECONDS - t1)) s"
t1=$SECONDS

# semgrep: its own venv beside prereview's, linked into prereview's bin (found next to the interpreter).
sg="$PREREVIEW_VENV/semgrep"
if [ -n "${PREREVIEW_SEMGREP:-}" ]; then
  say "semgrep: using $PREREVIEW_SEMGREP"
  mkdir -p "$sg/bin" && ln -sf "$PREREVIEW_SEMGREP" "$sg/bin/semgrep"
elif [ ! -x "$sg/bin/semgrep" ]; then
  say "semgrep $PREREVIEW_SEMGREP_VERSION (own venv)"
  "$PREREVIEW_PYTHON" -I -m venv "$sg"
  "$sg/bin/python" -I -m pip install "${pip_flags[@]}" "semgrep==$PREREVIEW_SEMGREP_VERSION"
fi
ln -sf "$sg/bin/semgrep" "$PREREVIEW_VENV/bin/semgrep"
say "semgrep ready in $((SECONDS - t1)) s"

# Fail here, with the reason, rather than in the review: every scanner and the runtime must load.
"$PREREVIEW_VENV/bin/prereview" --version >/dev/null
"$py" -I -m bandit --version >/dev/null
"$py" -I -c "import detect_secrets" 
"$PREREVIEW_VENV/bin/semgrep" --version >/dev/null
if [ "$PREREVIEW_LLAMA" = 1 ]; then
  "$py" -I -c "from bot.models.llama_cpp import load_backends; n = load_backends(); assert n, 'llama.cpp loaded no backend'"
fi
say "done in $((SECONDS - t0)) s"
