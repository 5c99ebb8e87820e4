"""Sandbox fixtures: a scratch work copy and the real bubblewrap backend (skipped when bwrap is missing)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.config import SandboxConfig
from bot.sandbox import create


@pytest.fixture
def work(tmp_path: Path) -> Path:
    w = tmp_path / "work"
    w.mkdir()
    return w


@pytest.fixture
def bwrap():
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap not installed (apt-get install bubblewrap)")
    return create(
        SandboxConfig(backend="bubblewrap", memory_mb=1024, max_processes=64, max_output_bytes=20_000)
    )
