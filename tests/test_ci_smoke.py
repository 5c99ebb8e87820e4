"""bot.cli.ci_smoke: the image's smoke test loads llama.cpp and the model and generates (issue 27)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.models import catalog


def _smoke(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli.ci_smoke", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.model
def test_the_test_model_loads_and_generates() -> None:
    proc = _smoke(catalog.TEST_MODEL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"prereview-smoke: {catalog.TEST_MODEL} generated ")


def test_a_model_that_cannot_load_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)  # a header and nothing else
    proc = _smoke(str(bad))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("prereview-smoke: error: ")


def test_a_missing_model_is_one_line(tmp_path: Path) -> None:
    proc = _smoke("qwen2.5-coder-1.5b", PREREVIEW_CACHE_DIR=str(tmp_path))
    if proc.returncode == 0:
        pytest.skip("the default model's parts are installed here: it assembles")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
