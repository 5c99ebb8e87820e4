"""A checkout owned by another user (a `container:` job, a runner that cloned as root): git calls it
"dubious ownership"; the review must still use it, not silently fall back to the API alone (issue 27)."""

from __future__ import annotations

import os
import subprocess

import pytest

from .conftest import Action

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to hand the checkout to another user")


def test_a_checkout_owned_by_another_user_is_still_used(action: Action) -> None:
    for name in ("GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"):
        action.monkeypatch.delenv(name, raising=False)  # restored after the test: the trust is per run
    subprocess.run(["chown", "-R", "65534:65534", str(action.repo)], check=True)
    probe = subprocess.run(["git", "-C", str(action.repo), "status"], capture_output=True, text=True)
    assert "dubious ownership" in probe.stderr  # git itself refuses it
    run = action.run("pull_request", action.opened())
    assert run.code == 0, run.err
    assert action.gh.calls("GET", "/pulls/1/files") == 0, "reviewed from the checkout, not the API's patches"
    assert "belongs to another user" in run.err
