"""How well the self-verification separates the model's true findings from its false ones.

Takes a finished `bench/quality.py` pipeline run (JSONL) and re-asks the current self-check
(`bot.merge.self_verify`) about the model's own findings of severity >= medium that the run recorded:
  - on `bug` changes, findings within the scoring window of the marked lines (should be confirmed);
  - on `alt_N`/`fix` changes, every such finding (false alarms: should be rejected).
Prints how many of each the check keeps, so a change to the check can be judged in minutes instead of
re-running the whole pipeline. Each case's repo is rebuilt with shared/bench/mk_pr_repo.py.

    python bench/selfcheck.py bench/out/full-pipeline.s0.jsonl bench/out/full-pipeline.s1.jsonl --limit 40
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from quality import fetch, make_repo  # noqa: E402

from bot.change import git  # noqa: E402
from bot.findings import analyze, merge  # noqa: E402
from bot.pipeline import run as runner  # noqa: E402
from bot.types import Finding  # noqa: E402

STRONG = {"medium", "high", "critical"}


def targets(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any], bool]]:
    """(row, recorded finding, is_true) for the model's strong findings, true ones first per change."""
    out = []
    for r in rows:
        slack = 2 if r["dataset"] == "secfix" else 1
        for f in r.get("findings", []):
            if f["source"] != "model" or f["severity"] not in STRONG:
                continue
            if r["kind"] == "bug":
                if any(f["line"] - slack <= n <= f["line"] + slack for n in r["lines"]):
                    out.append((r, f, True))
            else:
                out.append((r, f, False))
    return out


def reader(repo: Path, sha: str) -> Callable[[str], str | None]:
    return lambda p: git.show(repo, sha, p)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", type=Path, nargs="+", help="JSONL files of a quality.py pipeline run")
    ap.add_argument("--limit", type=int, default=0, help="at most N true and N false findings (0 = all)")
    ap.add_argument("--model", help="catalog name or .gguf path (default: the config's)")
    args = ap.parse_args()
    rows = [json.loads(x) for p in args.runs for x in p.read_text().splitlines() if x.strip()]
    todo = targets(rows)
    if args.limit:
        todo = [t for t in todo if t[2]][: args.limit] + [t for t in todo if not t[2]][: args.limit]
    cfg = runner.load_config(None, None, overrides={"model.name": args.model})
    model = runner.LazyModel(cfg, runner.Quiet())()
    system = analyze.system_prompt(cfg.review.instructions)
    kept = {True: 0, False: 0}
    total = {True: 0, False: 0}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="prereview-selfcheck-") as tmp:
        for i, (r, rec, true) in enumerate(todo, 1):
            repo, path = make_repo(r, Path(tmp) / str(i))
            change = fetch(repo)
            head = git.show(repo, change.head_sha, path) or ""
            lines = head.split("\n")
            quote = lines[rec["line"] - 1].strip() if 0 < rec["line"] <= len(lines) else ""
            f = Finding(
                path,
                rec["line"],
                rec["message"],
                rec["severity"],
                rec["category"],
                cwe=rec.get("cwe"),
                quote=quote,
            )
            code = merge.code_around(change.diff, f, reader(repo, change.head_sha))
            after = merge.self_verify(f, model, code, system)
            ok = after.severity in STRONG
            total[true] += 1
            kept[true] += ok
            mark = "kept" if ok else "rejected"
            kind = "TRUE " if true else "FALSE"
            print(f"[{i}/{len(todo)}] {kind} {r['dataset']} {r['case']} {r['kind']}: {mark}", flush=True)
    secs = time.monotonic() - t0
    print(
        f"\nself-check ({model.name}): true findings kept {kept[True]}/{total[True]}, "
        f"false alarms kept {kept[False]}/{total[False]} ({secs / max(1, len(todo)):.1f} s per check)"
    )


if __name__ == "__main__":
    main()
