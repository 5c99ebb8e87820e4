"""What the server's per-review checkout costs (prints figures; no assertions).

Serves a bare repository over git's smart HTTP protocol (`git http-backend`, Basic auth required, as a
forge does) on loopback and times, for a PR-like pair of commits (head = the tip, base = N first-parent
commits back):
  1. the worker's checkout (`bot.change.checkout.checkout`: one `git fetch --depth=DEPTH` of base and
     head, token in a header), its size on disk, and the merge-base lookup the review does next;
  2. a plain full `git clone` of the same repository, for comparison.

usage: python bench/checkout.py BARE_REPO [--back 5] [--runs 3]
"""

from __future__ import annotations

import argparse
import base64
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.change.checkout import DEPTH, checkout  # noqa: E402
from tests.fakes.git_http import GitHTTP  # noqa: E402

TOKEN = "bench-token"


def du(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("repo", type=Path, help="a bare repository")
    ap.add_argument("--back", type=int, default=5, help="base = head~BACK (first parent)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    bare = args.repo.resolve()
    rev = lambda r: subprocess.run(  # noqa: E731
        ["git", "-C", str(bare), "rev-parse", r], check=True, capture_output=True, text=True
    ).stdout.strip()
    head, base = rev("HEAD"), rev(f"HEAD~{args.back}")
    with tempfile.TemporaryDirectory(prefix="bench-checkout-") as tmp:
        root = Path(tmp) / "srv"
        root.mkdir()
        (root / "r.git").symlink_to(bare)
        with GitHTTP(root, "x-access-token", TOKEN) as server:
            url = server.url
            shallow, full, sizes, full_sizes, mb = [], [], [], [], []
            for i in range(args.runs):
                dest = Path(tmp) / f"w{i}"
                t0 = time.monotonic()
                checkout(f"{url}/r.git", [base, head], dest, user="x-access-token", token=TOKEN)
                shallow.append(time.monotonic() - t0)
                t0 = time.monotonic()
                subprocess.run(
                    ["git", "-C", str(dest), "merge-base", base, head], check=True, capture_output=True
                )
                mb.append(time.monotonic() - t0)
                sizes.append(du(dest / ".git"))
                dest2 = Path(tmp) / f"f{i}"
                basic = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
                header = f"http.extraHeader=Authorization: Basic {basic}"
                clone = ["git", "-c", header, "clone", "-q", f"{url}/r.git", str(dest2)]
                t0 = time.monotonic()
                subprocess.run(clone, check=True, capture_output=True)
                full.append(time.monotonic() - t0)
                full_sizes.append(du(dest2 / ".git"))
    count = subprocess.run(
        ["git", "-C", str(bare), "rev-list", "--count", "--all"], check=True, capture_output=True, text=True
    ).stdout.strip()
    print(f"repository: {bare} ({count} commits); base = head~{args.back}; {args.runs} runs, median")
    print(
        f"worker checkout (fetch --depth={DEPTH} of base and head, smart HTTP on loopback): "
        f"{statistics.median(shallow):.2f} s, .git {statistics.median(sizes):.1f} MB; "
        f"merge-base {statistics.median(mb) * 1000:.0f} ms"
    )
    print(
        f"full git clone, for comparison: {statistics.median(full):.2f} s, "
        f".git {statistics.median(full_sizes):.1f} MB"
    )


if __name__ == "__main__":
    main()
