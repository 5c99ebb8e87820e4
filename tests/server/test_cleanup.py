"""Nothing a job or a command started outlives it: a killed worker's job folder is removed when a worker
starts again, and SIGTERM of the CLI stops the scanners it started (with their own children)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bot.server import jobdirs
from bot.server.ledger import HOST
from tests.server.stack import ROOT, wait_for


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    return int(done.stdout)


def test_a_starting_worker_removes_the_job_folders_of_killed_workers(tmp_path: Path) -> None:
    root = tmp_path / "prereview-jobs"
    dead = root / f"{HOST}-{_dead_pid()}"
    (dead / "prereview-review-x" / "repo").mkdir(parents=True)
    (dead / "prereview-review-x" / "repo" / "app.py").write_text("the PR's code\n")
    alive = root / f"{HOST}-{os.getppid()}"  # another live worker's: kept
    alive.mkdir()
    elsewhere = root / f"otherhost-{_dead_pid()}"  # another machine's (shared /tmp): not ours to judge
    elsewhere.mkdir()
    saved = tempfile.tempdir, os.environ.get("TMPDIR")
    try:
        own = jobdirs.claim(root)
        assert not dead.exists() and alive.exists() and elsewhere.exists()
        assert own == root / f"{HOST}-{os.getpid()}" and tempfile.gettempdir() == str(own)
        assert os.environ["TMPDIR"] == str(own)
    finally:
        tempfile.tempdir = saved[0]
        if saved[1] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved[1]


def _alive(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rfind(")") + 2] != "Z"


def test_sigterm_of_the_cli_stops_the_scanner_and_its_children(tmp_path: Path, make_repo) -> None:
    repo = make_repo({"app.py": "a = 1\n"}, {"app.py": "a = 1\nb = eval(x)\n"})
    pids = tmp_path / "pids"
    fake = tmp_path / "semgrep"
    fake.write_text(f"#!/bin/sh\nsleep 300 &\necho $$ $! > {pids}\nwait\n")  # like semgrep + semgrep-core
    fake.chmod(0o755)
    cfg = tmp_path / "cfg.yml"
    scanners = {"secrets": False, "bandit": False, "patterns": True, "semgrep": str(fake)}
    cfg.write_text(yaml.safe_dump({"model": {"backend": "scripted"}, "scanners": scanners}))
    cli = subprocess.Popen(
        [sys.executable, "-m", "bot", "review", "--repo", str(repo), "--config", str(cfg)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 2, 60, "the scanner to start")
        scanner, child = (int(x) for x in pids.read_text().split())
        cli.send_signal(signal.SIGTERM)
        assert cli.wait(30) == 130
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (_alive(scanner) or _alive(child)):
            time.sleep(0.1)
        assert not _alive(scanner) and not _alive(child), "the scanner outlived the CLI"
    finally:
        if cli.poll() is None:
            cli.kill()
        for pid in (int(x) for x in (pids.read_text().split() if pids.exists() else [])):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
