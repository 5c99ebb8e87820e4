"""The behaviour stage on a big synthetic change against its budget (prints figures; no assertions).

A change adding N typed functions (issue 29: 1,200 new functions took 158 s against a 120 s budget). It
runs the stage alone (tests off, no model proposals, the bubblewrap sandbox when installed, else none
with allow_unsandboxed: the functions are `x * i + y`) and prints the stage's seconds against its budget
and the notes on what it left out.

usage: python bench/budgets.py [--functions 1200] [--files 12] [--budget 120]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.config import build  # noqa: E402
from bot.evidence.behaviour_stage import evidence_for  # noqa: E402
from bot.forges.local import LocalForge  # noqa: E402
from bot.pipeline.run import build_context  # noqa: E402
from bot.progress import Quiet  # noqa: E402
from bot.types import ChangeRef  # noqa: E402


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@b", *args],
        check=True,
        capture_output=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--functions", type=int, default=1200)
    ap.add_argument("--files", type=int, default=12)
    ap.add_argument("--budget", type=float, default=120.0)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        git(repo, "init", "-q", "-b", "main")
        (repo / "pkg").mkdir()
        (repo / "pkg/__init__.py").write_text("")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "base")
        per = a.functions // a.files
        for f in range(a.files):
            body = "".join(
                f"def f{f}_{i}(x: int, y: int) -> int:\n    return x * {i} + y\n\n\n" for i in range(per)
            )
            (repo / f"pkg/m{f}.py").write_text(body)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "head")
        sandbox = {"backend": "auto"} if shutil.which("bwrap") else {"backend": "none"}
        cfg = build(
            {
                "behaviour": {"budget_seconds": a.budget, "model_inputs": False, "allow_unsandboxed": True},
                "sandbox": sandbox,
                "tests": "off",
            },
            env={},
        )
        change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))
        t0 = time.monotonic()
        ctx, _ = build_context(change, cfg, progress=Quiet(), model=lambda: None)
        engine = evidence_for(ctx)
        prepared = time.monotonic() - t0
        assert engine is not None
        engine.run([])
        total = time.monotonic() - t0
        own = engine.seconds + getattr(engine, "seconds_prepare", 0.0)  # the stage alone, prepare included
        print(f"functions {len(engine.targets)}, sandbox {sandbox['backend']}, budget {a.budget:g}s")
        print(
            f"context {prepared:.1f}s, behaviour stage {own:.1f}s ({own / a.budget:.2f} × budget), "
            f"all {total:.1f}s"
        )
        for note in engine.all_notes():
            print(f"note: {note[:300]}")


if __name__ == "__main__":
    main()
