"""The Dockerfile: hadolint (no container engine here; CI's `image` job builds it), and what it bakes in."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests.ci_tools import ROOT, tool

DOCKERFILE = ROOT / "Dockerfile"


def _hadolint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool("hadolint"), "--no-color", "--failure-threshold", "warning", str(path)],
        capture_output=True,
        text=True,
    )


def _stages() -> list[str]:
    """The Dockerfile's stages, each from its FROM line to the next."""
    return re.split(r"(?m)^(?=FROM )", DOCKERFILE.read_text())[1:]


def test_hadolint_passes() -> None:
    proc = _hadolint(DOCKERFILE)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_catches_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN cd /src && pip install .\n")
    proc = _hadolint(bad)
    assert proc.returncode != 0 and "DL3007" in proc.stdout  # `latest` tag


def test_the_image_installs_the_whole_pipeline() -> None:
    text = DOCKERFILE.read_text()
    assert "scripts/ci/install.sh" in text and "bot.cli.ci_model" in text
    assert "bubblewrap" in text and "PREREVIEW_CACHE_DIR=/opt/prereview-cache" in text
    ignored = (ROOT / ".dockerignore").read_text().split()
    for needed in ("bot", "scripts", "pyproject.toml"):
        assert needed not in ignored


def test_the_bases_are_pinned_by_digest() -> None:
    text = DOCKERFILE.read_text()
    base = re.search(r"^ARG BASE=(\S+)$", text, re.M)
    assert base and re.search(r"@sha256:[0-9a-f]{64}$", base[1]), "a tag can be moved; a digest cannot"
    for line in re.findall(r"(?m)^FROM (\S+)", text):
        assert line in ("${BASE}", "${BUILD_BASE}") or not line.startswith(("python", "nvidia")), line


def test_the_llama_cpp_compile_does_not_depend_on_prereviews_source() -> None:
    llama = next(s for s in _stages() if " AS llama" in s.splitlines()[0])
    copies = re.findall(r"(?m)^COPY (\S+)", llama)
    assert copies == ["scripts/ci/llama-wheel.sh"], copies  # nothing of bot/, pyproject.toml, install.sh
    assert "llama-wheel.sh" in llama and "/wheels" in llama
    pin = re.search(r"ARG LLAMA_CPP_VERSION=(\S+)", llama)
    assert pin and f'llama = ["llama-cpp-python=={pin[1]}"]' in (ROOT / "pyproject.toml").read_text()


def test_the_runtime_loads_llama_cpp_as_a_non_root_user() -> None:
    runtime = _stages()[-1]
    assert "libgomp1" in runtime  # libggml-cpu needs libgomp.so.1: without it llama.cpp cannot load
    user = re.search(r"(?m)^USER (\S+)$", runtime)
    assert user and user[1].split(":")[0] not in ("0", "root")
    assert "bot.cli.ci_smoke" in runtime  # the smoke test loads the model and generates
    assert not re.search(r"(?m)^ENV[^\n]*(\\\n[^\n]*)*PREREVIEW_MODEL=", runtime), "would override configs"


def test_tini_is_pid_1_and_signals_the_whole_process_group() -> None:
    """Orphans of a review (a test's daemon, a killed runner's workers) are reparented to PID 1, which must
    reap them; a job's SIGTERM reaches everything the review started (-g). The podman test runs it."""
    runtime = _stages()[-1]
    installs = re.findall(r"apt-get install [^\n]*", runtime)
    assert any(re.search(r"\btini\b", line) for line in installs), installs  # Debian's, /usr/bin/tini
    [entry] = re.findall(r"(?m)^ENTRYPOINT (.*)$", DOCKERFILE.read_text())
    assert json.loads(entry) == ["/usr/bin/tini", "-g", "--"]  # exec form: tini itself is PID 1, not sh
    [cmd] = re.findall(r"(?m)^CMD (.*)$", runtime)
    assert json.loads(cmd)[0] == "prereview"  # the command runs under tini unchanged
