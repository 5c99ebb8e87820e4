# prereview with everything baked in: llama-cpp-python (a portable build), bandit, detect-secrets, semgrep
# (own venv), bubblewrap, git and the default model, so a CI job reviews with `image: …` and compiles and
# downloads nothing. The release workflow (.github/workflows/release.yml) builds and pushes four variants:
#   docker build -t prereview .                                          # CPU, default model
#   docker build --build-arg PREREVIEW_MODEL= -t prereview:nomodel .    # no model (fetched on first use)
#   docker build --build-arg BASE=$CUDA_RUNTIME --build-arg BUILD_BASE=$CUDA_DEVEL \
#                --build-arg LLAMA_BUILD=cuda -t prereview:cuda .        # CUDA (see release.yml)
#   docker build --build-arg PREREVIEW_MODEL=qwen2.5-coder-0.5b .        # the small test model
# Bases are pinned by digest (a tag can be moved; a digest cannot): python:3.11-slim-bookworm, the
# multi-platform index (Python 3.11.16). Both stages use the same base, so the venv's interpreter exists
# in the runtime stage. Bump deliberately: docker buildx imagetools inspect python:3.11-slim-bookworm.
ARG BASE=python:3.11-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b
ARG BUILD_BASE=${BASE}

# --- llama.cpp: compiled in a layer that prereview's own source never invalidates ----------------------
FROM ${BUILD_BASE} AS llama
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential git ca-certificates \
 && if ! command -v python3 >/dev/null; then \
      apt-get install -y --no-install-recommends python3 python3-venv python3-dev; fi \
 && rm -rf /var/lib/apt/lists/*
ARG LLAMA_BUILD=cpu
ARG LLAMA_CPP_VERSION=0.3.36
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
COPY scripts/ci/llama-wheel.sh /build/llama-wheel.sh
RUN python3 -m venv /build/venv \
 && PREREVIEW_BUILD_PYTHON=/build/venv/bin/python PREREVIEW_LLAMA_BUILD="${LLAMA_BUILD}" \
    PREREVIEW_LLAMA_VERSION="${LLAMA_CPP_VERSION}" PREREVIEW_WHEELHOUSE=/wheels bash /build/llama-wheel.sh

# --- prereview and its scanners (the wheel above: nothing compiled here) -------------------------------
FROM llama AS build
ARG LLAMA_BUILD=cpu
ARG LLAMA_CPP_VERSION=0.3.36
ENV PREREVIEW_VENV=/opt/prereview
WORKDIR /src
COPY pyproject.toml README.md Makefile ./
COPY bot ./bot
COPY scripts/ci ./scripts/ci
RUN PREREVIEW_PYTHON=python3 PREREVIEW_EXTRAS=github,gitlab PREREVIEW_WHEELHOUSE=/wheels \
    PREREVIEW_LLAMA_BUILD="${LLAMA_BUILD}" PREREVIEW_LLAMA_VERSION="${LLAMA_CPP_VERSION}" \
    bash scripts/ci/install.sh

# --- the model (empty PREREVIEW_MODEL: none) ------------------------------------------------------------
FROM build AS model
ARG PREREVIEW_MODEL=qwen2.5-coder-1.5b
ENV PREREVIEW_CACHE_DIR=/opt/prereview-cache
RUN mkdir -p /opt/prereview-cache/models \
 && if [ -n "${PREREVIEW_MODEL}" ]; then /opt/prereview/bin/python -m bot.cli.ci_model "${PREREVIEW_MODEL}"; fi

# --- runtime: no compilers, a non-root user ------------------------------------------------------------
FROM ${BASE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# libgomp1: llama.cpp's CPU backend (libggml-cpu*.so) is built with OpenMP; bubblewrap: the test sandbox;
# tini: PID 1 (the ENTRYPOINT below)
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap git libgomp1 ca-certificates tini \
 && if ! command -v python3 >/dev/null; then apt-get install -y --no-install-recommends python3; fi \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --user-group --create-home --shell /bin/bash prereview
COPY --from=build /opt/prereview /opt/prereview
COPY --from=model --chown=10001:10001 /opt/prereview-cache /opt/prereview-cache
# The cache dir also holds test runs and environments: writable by whatever user a runner picks.
RUN chmod 1777 /opt/prereview-cache /opt/prereview-cache/models
ARG PREREVIEW_MODEL=qwen2.5-coder-1.5b
ENV PATH=/opt/prereview/bin:$PATH \
    PREREVIEW_CACHE_DIR=/opt/prereview-cache \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    SEMGREP_ENABLE_VERSION_CHECK=0
USER 10001:10001
# The smoke test loads llama.cpp and the model and generates a few tokens (a missing shared library, as
# libgomp1 once was, fails here and not in the first review); without a baked model, the backends only.
RUN prereview --version && semgrep --version >/dev/null && bwrap --version \
 && if [ -n "${PREREVIEW_MODEL}" ]; then python -m bot.cli.ci_smoke "${PREREVIEW_MODEL}"; \
    else python -c "from bot.models.llama_cpp import load_backends; assert load_backends()"; fi
WORKDIR /workspace
# tini as PID 1: a review starts test runners, scanners and git, and their orphans (a test's daemon, a killed
# pytest's workers) are reparented to PID 1, which must reap them or they stay zombies for the container's
# life; -g sends a runner's SIGTERM (a cancelled job, `docker stop`) to the whole process group, so the
# review and everything it started stop at once. The command (CMD, a job's script, `docker run IMAGE cmd`)
# runs under it unchanged: GitLab's and Jenkins' shells, Actions' `docker://` args.
ENTRYPOINT ["/usr/bin/tini", "-g", "--"]
CMD ["prereview", "--help"]
