"""Choosing a sandbox by name; `none` only on explicit request and with a warning."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.config import SandboxConfig
from bot.sandbox import create
from bot.sandbox.registry import resolve_name
from bot.types import PrereviewError


def test_auto_is_bubblewrap_when_installed_and_never_none(monkeypatch):
    if shutil.which("bwrap"):
        assert resolve_name(SandboxConfig()) == "bubblewrap"
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(PrereviewError, match="install bubblewrap"):
        resolve_name(SandboxConfig())


def test_none_is_explicit_and_warns(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    sb = create(SandboxConfig(backend="none"))
    assert sb.name == "none" and sb.warning and "WITHOUT a sandbox" in sb.warning
    res = sb.run(["sh", "-c", "echo ${GITHUB_TOKEN:-clean}; exit 4"], cwd=tmp_path, timeout=30)
    assert (res.returncode, res.stdout.strip()) == (4, "clean")


def test_none_still_has_a_timeout(tmp_path: Path):
    res = create(SandboxConfig(backend="none")).run(["sleep", "30"], cwd=tmp_path, timeout=1)
    assert res.timed_out and res.killed_reason == "timeout"


def test_docker_backend_constructs_without_touching_the_engine():
    sb = create(SandboxConfig(backend="docker"))
    assert sb.name == "docker" and sb._client is None  # type: ignore[attr-defined]
