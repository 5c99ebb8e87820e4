"""Walkthrough quality on the shared dev set: does every summary name each changed file, and nothing
that is not in the diff?

Each change is built from two dev-set cases (quixbugs, humanevalfix, secfix_py) so it touches two files:
base = both base versions, head = both head versions (one commit each). The walkthrough
(`bot.pipeline.describe.describe_change`, the same call as `/describe`) runs with the configured model.
Per change it checks:
  - coverage: every changed file has its own non-empty line (the grammar makes the model name each file
    it was shown; a file left out for size counts as not covered);
  - foreign names: a file name (path.ext) in the summary, the file lines or the risky spots that is not
    one of the changed files (nor its basename);
  - valid answers (JSON for the schema, not cut), risky spots kept on diff lines.

    taskset -c 0 python bench/walkthrough.py --changes 10 --model qwen2.5-coder-1.5b
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from quality import BENCH, cases, make_repo, stratified  # noqa: E402

from bot.change import git  # noqa: E402
from bot.forges.local import LocalForge  # noqa: E402
from bot.pipeline import run as runner  # noqa: E402
from bot.pipeline.describe import describe_change  # noqa: E402
from bot.types import ChangeRef, Walkthrough  # noqa: E402

FILE_NAME = re.compile(
    r"(?<![\w/.-])([\w/.-]+\.(?:py|pyi|js|ts|go|java|rb|rs|c|h|cc|cpp|md|txt|json|ya?ml|toml|cfg|ini|sh))\b"
)


def _sh(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def pair_repo(a: dict[str, Any], b: dict[str, Any], tmp: Path) -> Path:
    """One two-commit repo whose change touches the changed files of both cases (under their own folders,
    so equal file names cannot collide)."""
    parts = []
    for i, c in enumerate((a, b)):
        repo, path = make_repo(c, tmp / f"src{i}")
        dest = f"{c['dataset']}_{i}/{path}"
        parts.append((dest, git.show(repo, "HEAD^", path) or "", git.show(repo, "HEAD", path) or ""))
    out = tmp / "pair"
    out.mkdir()
    _sh(out, "init", "-q")
    for rev in (1, 2):
        for dest, base, head in parts:
            f = out / dest
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(base if rev == 1 else head)
        _sh(out, "add", "-A")
        _sh(out, "-c", "user.name=bench", "-c", "user.email=b@x", "commit", "-q", "-m", f"rev {rev}")
    return out


def check(w: Walkthrough, changed: list[str]) -> dict[str, Any]:
    lines = {n.path: n.text for n in w.files}
    covered = [p for p in changed if lines.get(p, "").strip() and "not summarised" not in lines.get(p, "")]
    allowed = set(changed) | {p.rsplit("/", 1)[-1] for p in changed}
    prose = " ".join([w.summary, *lines.values(), *(r.why for r in w.risks)])
    foreign = sorted(
        {m for m in FILE_NAME.findall(prose) if m not in allowed and m.lstrip("./") not in allowed}
    )
    return {"covered": len(covered), "files": len(changed), "foreign": foreign, "valid": not w.note}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--changes", type=int, default=10, help="two-file changes to describe")
    ap.add_argument("--model", help="catalog name or .gguf path (default: the config's)")
    ap.add_argument("--datasets", default="quixbugs,humanevalfix,secfix")
    args = ap.parse_args()
    if not BENCH.is_dir():
        sys.exit(f"the dev set is not at {BENCH}; set PREREVIEW_BENCH")
    todo = stratified(cases(args.datasets.split(","), ["bug"], extra=False))[: 2 * args.changes]
    cfg = runner.load_config(None, None, overrides={"model.name": args.model})
    lazy = runner.LazyModel(cfg, runner.Quiet())
    model = lazy()
    rows = []
    t_all = time.monotonic()
    for i in range(0, len(todo) - 1, 2):
        with tempfile.TemporaryDirectory(prefix="prereview-walkthrough-") as tmp:
            repo = pair_repo(todo[i], todo[i + 1], Path(tmp))
            change = LocalForge().fetch(ChangeRef("local", str(repo), base="HEAD^", head="HEAD"))
            change = replace(change, title="")  # the commit subject never reaches the prompt
            changed = sorted(f.path for f in change.diff.files)
            t0 = time.monotonic()
            w = describe_change(change, cfg, lambda: model)
            row = {**check(w, changed), "seconds": time.monotonic() - t0, "risks": len(w.risks)}
            rows.append(row)
            tag = "ok" if row["covered"] == row["files"] and not row["foreign"] else "MISS"
            foreign = row["foreign"] or "-"
            print(
                f"{i // 2 + 1:>2} {tag:4} files {row['covered']}/{row['files']} foreign {foreign} "
                f"risks {row['risks']} valid {row['valid']} {row['seconds']:.1f}s"
                + (f"  [{w.note}]" if w.note else ""),
                flush=True,
            )
    n = len(rows)
    all_named = sum(1 for r in rows if r["covered"] == r["files"])
    clean = sum(1 for r in rows if not r["foreign"])
    files = sum(r["files"] for r in rows)
    both = sum(1 for r in rows if r["covered"] == r["files"] and not r["foreign"])
    valid = sum(1 for r in rows if r["valid"])
    covered = sum(r["covered"] for r in rows)
    per_change = sum(r["seconds"] for r in rows) / max(n, 1)
    print(
        f"\nmodel {model.name} · {n} changes ({files} files) · every file named: {all_named}/{n} · "
        f"nothing outside the diff: {clean}/{n} · both: {both}/{n} · valid answers: {valid}/{n} · "
        f"files covered {covered}/{files} · {per_change:.1f}s per change "
        f"(total {time.monotonic() - t_all:.0f}s)"
    )


if __name__ == "__main__":
    main()
