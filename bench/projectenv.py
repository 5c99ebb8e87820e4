"""Does the tests stage flag re-introduced real bugs in a real src-layout project? Cold and warm times.

For each fix commit C of a local clone (e.g. pallets/click): base = C (the fix and its regression test),
head = C with the source part of the fix reverted (tests kept), so the regression test fails at head.
Runs `prereview review` (scripted model, patches off) twice per case — cold (empty environment and
test-run caches) and warm (both cached) — and prints whether a `tests/broken` finding landed on the
reverted file, and the seconds.

    python bench/projectenv.py /tmp/click 762c97ee 82f377c5 0551bf53 [--src src/]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@example.invalid", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def make_case(repo: Path, commit: str, src: str) -> tuple[str, str, list[str]]:
    """(base, head, reverted files): head reverts the fix's changes under `src`."""
    changed = [f for f in git(repo, "diff", "--name-only", f"{commit}^", commit, "--", src).splitlines() if f]
    git(repo, "checkout", "-q", "--detach", commit)
    git(repo, "checkout", f"{commit}^", "--", *changed)
    git(repo, "commit", "-q", "-m", f"revert the source part of {commit}")
    return git(repo, "rev-parse", commit), git(repo, "rev-parse", "HEAD"), changed


def review(repo: Path, base: str, head: str, cfg: Path, cache: Path) -> tuple[dict, float, str]:
    out = cache.parent / f"{cache.name}-review.json"
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot",
            "review",
            "--repo",
            str(repo),
            "--base",
            base,
            "--head",
            head,
            "--config",
            str(cfg),
            "--format",
            "json",
            "--output",
            str(out),
        ],  # --output: progress on stderr
        capture_output=True,
        text=True,
        env={**os.environ, "PREREVIEW_CACHE_DIR": str(cache), "PREREVIEW_ENV_DIR": str(cache / "envs")},
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(f"review failed: {proc.stderr[-2000:]}")
    return json.loads(out.read_text()), round(time.monotonic() - t0, 1), proc.stderr


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("repo", type=Path)
    ap.add_argument("commits", nargs="+")
    ap.add_argument("--src", default="src/")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-projectenv-") as tmp:
        work = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "-q", str(args.repo), str(work)], check=True)
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps({"replies": [], "default": {"findings": []}}))
        cfg = Path(tmp) / "cfg.yml"
        cfg.write_text(
            json.dumps(
                {
                    "model": {"backend": "scripted", "script": str(script)},
                    "patches": {"enabled": False},
                    "scanners": {"bandit": False, "patterns": False, "secrets": False},
                }
            )
        )
        flagged = 0
        for commit in args.commits:
            base, head, files = make_case(work, commit, args.src)
            cache = Path(tmp) / f"cache-{commit}"
            rows = []
            for label in ("cold", "warm"):
                data, secs, err = review(work, base, head, cfg, cache)
                broken = [f for f in data["findings"] if f["rule_id"] == "tests/broken"]
                env = re.findall(r"environment\s+([\d.]+)s,\s+tests\s+([\d.]+)s", err)
                rows.append((label, secs, env[-1] if env else ("-", "-"), broken, data["notes"]))
            ok = bool(rows[0][3]) and rows[0][3][0]["path"] in files
            flagged += ok
            for label, secs, (env_s, test_s), broken, notes in rows:
                where = f"{broken[0]['path']}:{broken[0]['line']}" if broken else "-"
                print(
                    f"{commit} {label}: flagged={bool(broken)} at {where} (reverted: {', '.join(files)}); "
                    f"review {secs}s, environment {env_s}s, tests {test_s}s; notes={notes}"
                )
            shutil.rmtree(cache, ignore_errors=True)
        print(f"flagged on the right file: {flagged}/{len(args.commits)}")


if __name__ == "__main__":
    main()
