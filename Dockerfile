# prereview with everything baked in: the portable llama-cpp-python build (every x86 level, picked at
# load time), bandit, detect-secrets, semgrep (own venv), bubblewrap, git and the default model, so a CI
# job reviews with `image: …` and compiles nothing.
#   docker build -t prereview .                                   # default model (qwen2.5-coder-1.5b)
#   docker build --build-arg PREREVIEW_MODEL=qwen2.5-coder-0.5b .  # the small test model
#   LLAMA_BUILD=cuda needs the CUDA toolkit in the build stage (docs/github.md, GPU runners)
ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-bookworm AS build
ARG LLAMA_BUILD=cpu
ARG PREREVIEW_MODEL=qwen2.5-coder-1.5b
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PREREVIEW_VENV=/opt/prereview \
    PREREVIEW_CACHE_DIR=/opt/prereview-cache
WORKDIR /src
COPY pyproject.toml README.md Makefile ./
COPY bot ./bot
COPY scripts/ci ./scripts/ci
RUN PREREVIEW_PYTHON=python3 PREREVIEW_EXTRAS=github,gitlab PREREVIEW_WHEELHOUSE=/tmp/wheels \
    PREREVIEW_LLAMA_BUILD="${LLAMA_BUILD}" bash scripts/ci/install.sh \
 && /opt/prereview/bin/python -m bot.cli.ci_model "${PREREVIEW_MODEL}" \
 && rm -rf /tmp/wheels

FROM python:${PYTHON_VERSION}-slim-bookworm
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap git \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/prereview /opt/prereview
COPY --from=build /opt/prereview-cache /opt/prereview-cache
# The cache dir also holds test-run results: writable by whatever user a runner picks.
RUN chmod 1777 /opt/prereview-cache
ENV PATH=/opt/prereview/bin:$PATH \
    PREREVIEW_CACHE_DIR=/opt/prereview-cache \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN prereview --version && semgrep --version >/dev/null && bwrap --version
WORKDIR /workspace
CMD ["prereview", "--help"]
