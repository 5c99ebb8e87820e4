"""The sandbox is checked with its own argv before a review relies on it (issue 27, item 3).

A host where `bwrap --ro-bind / / true` works but the real argv (`--proc /proc --dev /dev …`) cannot start
(a Docker executor with a masked /proc, a `container:` job, a Kubernetes runner) is emulated by a bwrap on
PATH that refuses `--proc` and hands everything else to the real one.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bot.cli.ci_env import sandbox_off
from bot.config import Config, SandboxConfig
from bot.sandbox import create, preflight
from bot.types import PrereviewError
from tests.sandbox.masked import masked_proc, needs_bwrap

pytestmark = needs_bwrap


def test_the_weak_probe_passes_where_the_sandbox_cannot_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    masked_proc(tmp_path, monkeypatch)
    weak = subprocess.run(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"], capture_output=True)
    assert weak.returncode == 0, weak.stderr  # what the old preflight checked: it passes here
    why = preflight(SandboxConfig(backend="auto"))
    assert why is not None and "Can't mount proc" in why
    with pytest.raises(PrereviewError, match="cannot start on this host"):
        create(SandboxConfig(backend="bubblewrap"))


def test_a_working_bwrap_passes_the_preflight() -> None:
    assert preflight(SandboxConfig(backend="bubblewrap")) is None
    assert preflight(SandboxConfig(backend="none")) is None


def test_sandbox_off_turns_every_sandboxed_stage_off_with_one_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    masked_proc(tmp_path, monkeypatch)
    cfg = Config.model_validate({"tests": "auto", "sandbox": {"backend": "auto"}})
    off, note = sandbox_off(cfg, {})
    assert note is not None and note.startswith("Sandbox off on this runner:") and "Can't mount proc" in note
    assert not off.tests.enabled and off.sandbox.backend == "none" and not off.behaviour.enabled
    assert (
        sandbox_off(Config.model_validate({"tests": "off", "behaviour": {"enabled": False}}), {})[1] is None
    )
