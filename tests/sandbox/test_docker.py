"""The docker sandbox against a real engine; skipped with the reason when none is reachable."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import SandboxConfig
from bot.sandbox.docker import DockerSandbox
from bot.types import PrereviewError

pytestmark = pytest.mark.docker


@pytest.fixture
def docker_sb() -> DockerSandbox:
    sb = DockerSandbox(
        SandboxConfig(backend="docker", image="python:3.11-slim", memory_mb=256, max_processes=64)
    )
    try:
        sb.client()
    except PrereviewError as exc:
        pytest.skip(str(exc))
    try:
        sb.client().images.get(sb.cfg.image)
    except Exception as exc:  # noqa: BLE001 - any lookup failure means: image not available here
        pytest.skip(f"docker image {sb.cfg.image} not available locally ({type(exc).__name__})")
    return sb


def test_runs_in_the_mounted_work_copy_without_network(docker_sb: DockerSandbox, tmp_path: Path):
    (tmp_path / "t.py").write_text(
        "import os, socket\nopen('out.txt', 'w').write('ok')\n"
        "try:\n    socket.create_connection(('1.1.1.1', 80), timeout=3); print('CONNECTED')\n"
        "except OSError:\n    print('blocked')\n"
    )
    res = docker_sb.run(["python", "t.py"], cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.output
    assert res.stdout.strip() == "blocked" and (tmp_path / "out.txt").read_text() == "ok"


def test_timeout_kills_and_removes_the_container(docker_sb: DockerSandbox, tmp_path: Path):
    res = docker_sb.run(["sleep", "600"], cwd=tmp_path, timeout=3)
    assert res.timed_out and res.killed_reason == "timeout"
    assert not docker_sb.client().containers.list(
        all=True, filters={"ancestor": docker_sb.cfg.image, "status": "exited"}
    )


def test_unreachable_engine_is_a_one_line_error(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    with pytest.raises(PrereviewError, match="no Docker engine reachable"):
        DockerSandbox(SandboxConfig(backend="docker")).client()
