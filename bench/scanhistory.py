"""How often an in-process scanner fires on a project's real history: its false-alarm rate, measured on
thousands of commits no rule was shaped on.

Every single-parent commit among the last N of each clone that modifies Python files is scanned as a
change (the parent as base, the commit as head, added lines from its git diff), with the same filter the
review uses (only what the change introduces: `scanners.introduced`). Prints the commits scanned, those
it fired on (each with its subject, for a person to judge: a real bug put in, or a false alarm), and the
rate. No model, no sandbox: the scanners read text.

    python bench/scanhistory.py --last 1500 /tmp/rw-requests /tmp/rw-flask ...   # unreachable (default)
    python bench/scanhistory.py --scanner safeguards --last 300 /tmp/rw-flask
    python bench/scanhistory.py --scanner attributes --last 1500 /tmp/rw-requests ...
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.change.diff import parse as parse_diff  # noqa: E402
from bot.config import ScannersConfig  # noqa: E402
from bot.findings.scanners import attributes, changed_files, introduced, safeguards, unreachable  # noqa: E402
from bot.types import Finding  # noqa: E402


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, errors="replace")
    return out.stdout


def scan_commit(repo: Path, parent: str, sha: str, scanner: str) -> list[Finding] | None:
    """What the scanner reports on the commit's modified Python files (None: it modifies none), from the
    commit's git diff read as the review reads a change (`changed_files`: added lines, base and head)."""
    files = [
        f
        for f in git(repo, "diff", "--name-only", "--diff-filter=M", parent, sha).split()
        if f.endswith(".py")
    ]
    if not files:
        return None
    diff = parse_diff(git(repo, "diff", parent, sha, "--", *files))
    if scanner == "safeguards":
        return safeguards.scan(diff)
    changed = changed_files(
        diff, lambda p: git(repo, "show", f"{sha}:{p}"), lambda p: git(repo, "show", f"{parent}:{p}")
    )
    scan = attributes.scan if scanner == "attributes" else unreachable.scan
    return introduced(scan, changed, ScannersConfig()) if changed else []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("clones", type=Path, nargs="+")
    ap.add_argument("--last", type=int, default=300, help="commits per clone (newest first)")
    ap.add_argument("--scanner", choices=("unreachable", "safeguards", "attributes"), default="unreachable")
    args = ap.parse_args(argv)
    t0, scanned, fired = time.monotonic(), 0, []
    for repo in args.clones:
        log = git(repo, "log", "--no-merges", "--format=%H %P%x00%s", "-n", str(args.last))
        for line in log.splitlines():
            shas, _, subject = line.partition("\x00")
            parts = shas.split()
            if len(parts) != 2:
                continue
            found = scan_commit(repo, parts[1], parts[0], args.scanner)
            if found is None:
                continue
            scanned += 1
            if found:
                f = found[0]
                fired.append(
                    f"  {repo.name} {parts[0][:10]} {f.path}:{f.line} ({subject[:60]}): {f.message[:80]}"
                )
    print(
        f"{args.scanner}: {len(args.clones)} clone(s), {scanned} commit(s) changing Python, "
        f"fired on {len(fired)}"
    )
    print("\n".join(fired))
    rate = len(fired) / scanned if scanned else 0.0
    print(f"rate {rate:.2%} of commits; {time.monotonic() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
