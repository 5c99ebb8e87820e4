"""The Action's image mode caches a -nomodel image's model in the checkout (scripts/ci/image-model.sh):
a link the pull request commits there must not carry the mount and the model's writes out of it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _fetch(tmp_path: Path, workspace: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "docker-calls"
    (bin_dir / "docker").write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    (bin_dir / "docker").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PREREVIEW_IMAGE": "prereview:nomodel",
        "GITHUB_WORKSPACE": str(workspace),
        "PREREVIEW_CACHE_DIR": str(workspace / ".cache" / "prereview"),
    }
    script = ROOT / "scripts" / "ci" / "image-model.sh"
    return subprocess.run(["bash", str(script), "fetch"], env=env, capture_output=True, text=True, timeout=30)


def test_a_link_in_the_checkout_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "home-ssh"
    outside.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".cache").symlink_to(outside)
    res = _fetch(tmp_path, workspace)
    assert res.returncode == 2 and "is a link in the checkout" in res.stderr
    assert list(outside.iterdir()) == []  # nothing made or written through the link
    assert not (tmp_path / "docker-calls").exists()  # and nothing mounted


def test_a_plain_checkout_gets_its_cache_dir(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    res = _fetch(tmp_path, workspace)
    assert res.returncode == 0, res.stderr
    assert (workspace / ".cache" / "prereview" / ".gitignore").read_text() == "*\n"
    assert "-v " in (tmp_path / "docker-calls").read_text()
