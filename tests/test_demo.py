"""`prereview review --demo` on a machine as a new user has it (issue 29, item 1): its first line says
what is off and the command that turns it on, and it shows the change it reviewed. The scripted model
stands in for the bundled one; the behaviour finding itself is tests/evidence/test_behaviour.py's."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

import bot.demo
from bot.config import build
from tests.test_cli import run_cli

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def scripted(tmp_path: Path) -> Path:
    path = tmp_path / "cfg.yml"
    data = {
        "model": {"backend": "scripted"},
        "scanners": {"secrets": False, "bandit": False, "patterns": False},
    }
    path.write_text(yaml.safe_dump(data))
    return path


def _no_bwrap(monkeypatch) -> None:
    real = shutil.which
    monkeypatch.setattr(
        shutil, "which", lambda name, *a, **k: None if name == "bwrap" else real(name, *a, **k)
    )


def test_without_bubblewrap_the_first_line_says_so_and_names_the_command(
    monkeypatch, capsys, scripted
) -> None:
    _no_bwrap(monkeypatch)
    code, out, err = run_cli(["review", "--demo", "--config", str(scripted)], capsys)
    assert code == 0
    first = err.splitlines()[0]
    assert first.startswith("prereview demo: behaviour comparison is off")
    assert "bubblewrap is not installed" in first and bot.demo.INSTALL_BWRAP in first


def test_the_demo_shows_the_change_it_reviewed_before_the_findings(capsys, scripted) -> None:
    code, out, _ = run_cli(["review", "--demo", "--config", str(scripted)], capsys)
    assert code == 0 and out.startswith("The demo reviews this change (git diff ")
    diff_at = out.index("diff --git a/users.py b/users.py")
    assert (
        "-    return sum(values) / len(values)" in out
        and "+    return sum(values) / (len(values) - 1)" in out
    )
    assert diff_at < out.index("finding(s) in")


def test_machine_formats_stay_parseable_the_change_goes_to_stderr(capsys, scripted) -> None:
    code, out, err = run_cli(["review", "--demo", "--config", str(scripted), "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["coverage"]["reviewed"] == ["users.py"]
    assert "diff --git a/users.py b/users.py" in err


@pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap not installed (apt-get install bubblewrap)"
)
def test_with_a_working_sandbox_nothing_is_said_off() -> None:
    assert bot.demo.behaviour_off(build({}, env={})) is None


def test_sandbox_none_and_behaviour_off_are_said_too(monkeypatch) -> None:
    off = bot.demo.behaviour_off(build({"sandbox": {"backend": "none"}}, env={}))
    assert off is not None and "sandbox.backend is none" in off and bot.demo.INSTALL_BWRAP in off
    off = bot.demo.behaviour_off(build({"behaviour": {"enabled": False}}, env={}))
    assert off is not None and "behaviour.enabled: false" in off


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_demo_installs_bubblewrap_where_it_can() -> None:
    """The demo target runs the system-deps script for itself (bubblewrap and git only, never failing the
    demo), as `make test` does for the suite."""
    plan = subprocess.run(["make", "-n", "demo"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "bash scripts/system-deps.sh demo" in plan
    assert plan.index("system-deps.sh demo") < plan.index("prereview review --demo")


def test_system_deps_for_the_demo_asks_for_bubblewrap_only(tmp_path: Path) -> None:
    """Not root and no bubblewrap: the demo mode names bubblewrap and its command (not redis-server) and
    exits 0, so the demo goes on."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    (bin_ / "id").write_text("#!/bin/sh\necho 1000\n")
    (bin_ / "id").chmod(0o755)
    bash = shutil.which("bash") or "/bin/bash"

    def deps(*args: str) -> subprocess.CompletedProcess[str]:
        script = str(ROOT / "scripts" / "system-deps.sh")
        env = {"PATH": str(bin_)}
        return subprocess.run([bash, script, *args], env=env, capture_output=True, text=True, check=False)

    demo = deps("demo")
    assert demo.returncode == 0
    assert "missing bubblewrap;" in demo.stderr and "sudo apt-get install -y bubblewrap" in demo.stderr
    assert "redis-server" not in demo.stderr
    assert "missing bubblewrap redis-server" in deps().stderr  # the test suite's list is unchanged
