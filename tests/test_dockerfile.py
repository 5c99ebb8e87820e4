"""The Dockerfile: hadolint (no container engine here; CI's `image` job builds it), and what it bakes in."""

from __future__ import annotations

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
