"""bench/scanhistory.py: a scanner run over a project's real history counts the commits it fires on."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("bench_scanhistory", ROOT / "bench" / "scanhistory.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _commit(repo: Path, text: str, message: str) -> None:
    (repo / "m.py").write_text(text)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "-C", str(repo), *ident, "commit", "-q", "-m", message], check=True)


def test_the_history_scan_counts_only_commits_that_put_dead_code_in(tmp_path: Path, capsys) -> None:
    repo = tmp_path / "proj"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _commit(repo, "def f():\n    return 1\n", "start")
    _commit(repo, "def f():\n    return 2\n", "ordinary")
    _commit(repo, "def f():\n    return 2\n    cleanup()\n", "dead code put in")
    _commit(
        repo,
        "def f():\n    return 2\n    cleanup()\n\n\ndef g():\n    return 3\n",
        "already dead: not this one",
    )
    assert _load().main(["--last", "10", str(repo)]) == 0
    out = capsys.readouterr().out
    assert "3 commit(s) changing Python, fired on 1" in out  # the root commit has no parent
    assert "(dead code put in)" in out and "rate 33.33%" in out


def test_the_history_scan_of_the_attributes_scanner(tmp_path: Path, capsys) -> None:
    repo = tmp_path / "proj"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    cls = "class A:\n    def __init__(self):\n        self.size = 1\n\n    def f(self):\n        return {}\n"
    _commit(repo, cls.format("self.size"), "start")
    _commit(repo, cls.format("self.size + 1"), "ordinary")
    _commit(repo, cls.format("self.sise"), "typo put in")
    assert _load().main(["--scanner", "attributes", "--last", "10", str(repo)]) == 0
    out = capsys.readouterr().out
    assert "2 commit(s) changing Python, fired on 1" in out
    assert "(typo put in)" in out and "`self.sise`" in out
