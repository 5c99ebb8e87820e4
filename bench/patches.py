"""Patch success on the shared dev set: quixbugs and humanevalfix `bug` changes, the default model.

For each case: build the two-commit repo (base = fixed, head = buggy), run the patch stage exactly as
`prereview review`/`prereview fix` do (tests at base and head in the sandbox -> the broken-tests finding
-> up to k candidates on the temperature ladder -> verified in the sandbox; optionally the agent loop).
Then check the posted patch independently: applied to head, the case's own test command passes and no
test file was touched. Prints success rate, median seconds per case and how many candidates were needed.

    python bench/patches.py --limit 4                        # quick look
    python bench/patches.py --datasets quixbugs              # the 16 dev quixbugs cases
    python bench/patches.py --datasets humanevalfix --limit 20 --out bench/out/patches-hef.jsonl
    python bench/patches.py --report bench/out/patches.jsonl # figures of a finished or partial run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.change import git  # noqa: E402
from bot.change.diff import is_test_path  # noqa: E402
from bot.config import Config  # noqa: E402
from bot.evidence import testrun  # noqa: E402
from bot.evidence.breakage import failure_excerpt  # noqa: E402
from bot.evidence.runs import run_tests  # noqa: E402
from bot.forges.local import LocalForge  # noqa: E402
from bot.models.registry import create  # noqa: E402
from bot.patches import agent  # noqa: E402
from bot.patches.verify import Patcher  # noqa: E402
from bot.progress import Quiet  # noqa: E402
from bot.types import ChangeRef  # noqa: E402

BENCH = Path(os.environ.get("PREREVIEW_BENCH", ROOT.parent / "shared" / "bench"))
if not BENCH.is_dir():
    BENCH = Path("/work/shared/bench")


def cases(datasets: list[str]) -> list[tuple[str, str]]:
    out = []
    if "quixbugs" in datasets:
        out += [
            ("quixbugs", c["program"]) for c in json.loads((BENCH / "quixbugs" / "cases.json").read_text())
        ]
    if "humanevalfix" in datasets:
        out += [
            ("humanevalfix", c["case"])
            for c in json.loads((BENCH / "humanevalfix" / "cases.json").read_text())
        ]
    return out


def build(dataset: str, case: str, dest: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "mk_pr_repo.py"), dataset, str(BENCH / dataset), case, str(dest)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(proc.stdout)


def run_case(dataset: str, case: str, model: Any, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    info = build(dataset, case, tmp / f"{dataset}-{case}")
    repo = Path(info["repo"])
    cfg = Config(
        model={"name": args.model},
        test_command=info["test_cmd"],
        patches={
            "candidates": args.candidates,
            "budget_seconds": args.budget,
            "agent_steps": args.agent_steps,
        },
    )
    change = LocalForge().fetch(ChangeRef("local", str(repo)))
    t0 = time.monotonic()
    runs = run_tests(change, cfg, cache_dir=tmp / "cache")
    stage = Patcher(change, cfg, runs)
    row: dict[str, Any] = {"dataset": dataset, "case": case, "ok": False, "candidates": 0, "agent": False}
    if runs.breakage is None or runs.runner is None or runs.head is None:
        row.update(error=f"tests not broken at head (head: {runs.head.summary() if runs.head else 'no run'})")
        return row
    finding = runs.breakage_findings(change)[0]
    row["localized"] = f"{finding.path}:{finding.line}"
    verdict = stage.fix(finding, lambda: model, Quiet(), time.monotonic() + args.budget)
    row["candidates"] = len(stage.verdicts)
    row["tried"] = [v.reason for v in stage.verdicts]
    files: dict[str, str] = {}
    if verdict is not None:
        text = git.show(repo, change.head_sha, verdict.patch.path) or ""
        files = {verdict.patch.path: verdict.patch.apply(text)}
        row["patch"] = {"start": verdict.patch.start, "new": verdict.patch.suggestion}
    elif args.agent_steps > 0:
        ws = agent.Workspace(testrun.export_tree(repo, change.head_sha, tmp / f"agent-{case}"))
        task = f"{finding.message}\n\nFailing test output (end):\n{failure_excerpt(runs.head.output)}"
        res = agent.run(
            model,
            ws,
            runs.runner,
            head=runs.head,
            breakage=runs.breakage,
            task=task,
            near=(finding.path, finding.line),
            max_steps=args.agent_steps,
        )
        row.update(agent=True, agent_steps=res.steps, agent_log=res.log)
        files = res.files if res.ok else {}
    row["seconds"] = round(time.monotonic() - t0, 1)
    if files:
        row["ok"] = independent_check(repo, files, info["test_cmd"])
        row["touches_tests"] = any(is_test_path(p) for p in files)
        row["ok"] = row["ok"] and not row["touches_tests"]
        # a patch that puts the changed lines back exactly as they were at base (an honest revert)
        row["restores_base"] = all(git.show(repo, change.base_sha, p) == t for p, t in files.items())
    return row


def independent_check(repo: Path, files: dict[str, str], test_cmd: str) -> bool:
    """Apply the posted patch to head's working tree and run the case's own test command there."""
    for path, text in files.items():
        (repo / path).write_text(text, encoding="utf-8")
    argv = test_cmd.split()
    argv[argv.index("python")] = sys.executable
    proc = subprocess.run(argv, cwd=repo, capture_output=True, text=True, check=False)
    return proc.returncode == 0


def report(rows: list[dict[str, Any]]) -> None:
    for dataset in sorted({r["dataset"] for r in rows}):
        rs = [r for r in rows if r["dataset"] == dataset]
        ok = [r for r in rs if r["ok"]]
        secs = [r["seconds"] for r in rs if "seconds" in r]
        needed = Counter(r["candidates"] for r in ok if not r.get("agent"))
        print(
            f"{dataset}: patch success {len(ok)}/{len(rs)} = {len(ok) / max(1, len(rs)):.0%}"
            f"  median {statistics.median(secs) if secs else 0:.0f}s per case"
            f"  (max {max(secs) if secs else 0:.0f}s)"
        )
        print(
            f"  candidates needed (single shots): {dict(sorted(needed.items()))}"
            f"  agent rescues: {sum(1 for r in ok if r.get('agent'))}"
            f"  mean candidates tried per case: {statistics.mean(r['candidates'] for r in rs):.1f}"
        )
        reverts = sum(bool(r.get("restores_base")) for r in ok)
        print(f"  verified patches that restore the base text exactly: {reverts}")
        failed = [r["case"] for r in rs if not r["ok"]]
        if failed:
            print(f"  not fixed: {', '.join(failed)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["quixbugs", "humanevalfix"])
    ap.add_argument("--limit", type=int, default=0, help="at most N cases per dataset (0 = all)")
    ap.add_argument("--cases", nargs="+", help="only these case names")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--candidates", type=int, default=Config().patches.candidates)
    ap.add_argument("--budget", type=float, default=900.0, help="seconds of proposing+verifying per case")
    ap.add_argument("--agent-steps", type=int, default=0, help="agent loop steps after failed single shots")
    ap.add_argument("--out", type=Path, help="append one JSON line per case here")
    ap.add_argument("--report", type=Path, help="only print the figures of an existing JSONL")
    args = ap.parse_args()
    if args.report:
        report([json.loads(ln) for ln in args.report.read_text().splitlines() if ln.strip()])
        return
    todo = []
    for d in args.datasets:
        cs = [c for c in cases([d]) if not args.cases or c[1] in args.cases]
        todo += cs[: args.limit] if args.limit else cs
    model = create(Config(model={"name": args.model}).model)
    rows = []
    with tempfile.TemporaryDirectory(prefix="prereview-bench-patches-") as tmp:
        for dataset, case in todo:
            row = run_case(dataset, case, model, args, Path(tmp))
            rows.append(row)
            agent_mark = " agent" if row.get("agent") else ""
            status = "OK " if row["ok"] else "no "
            line = f"{dataset}/{case}: {status} {row.get('seconds', 0):>6}s"
            line += f" candidates={row['candidates']}{agent_mark}"
            print(f"{line} {row.get('error', '')}".rstrip(), flush=True)
            if args.out:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                with args.out.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
    report(rows)


if __name__ == "__main__":
    main()
