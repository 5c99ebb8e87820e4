"""The tests stage's own overhead: the same suite at base and head run plain and with the behaviour tracer
(issue 26, "report the tests stage's own overhead"), on real-world corpus cases (bench/realworld.py).

    python bench/traceoverhead.py --clone requests=/tmp/rw-requests ... --half tuning --limit 8

For each case (round-robin over projects, `hidden` cases by default) the case repository is rebuilt, the
project environment built once (shared `PREREVIEW_ENV_DIR`, not timed), then the tests are run at base
and head twice: plain (no tracer) and traced (the tracer the behaviour stage loads for the change's
callables), alternating which goes first so a warm file cache favours neither. Prints per case and the
medians: plain seconds, traced seconds and the ratio. Cases where either side is unusable or no target
is traced (no function changed) are counted, not timed. No model is loaded.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import realworld  # noqa: E402
import rwcorpus  # noqa: E402


def _context(repo: Path, cfg: Any, cache: Path) -> Any:
    from bot.forges.local import LocalForge
    from bot.pipeline import run as runner
    from bot.progress import Quiet
    from bot.types import ChangeRef

    change = LocalForge().fetch(ChangeRef("local", str(repo), base="HEAD^", head="HEAD"))
    ctx, _ = runner.build_context(change, cfg, progress=Quiet(), model=lambda: None, cache_dir=cache)
    return ctx


def time_case(repo: Path, cfg: Any, cache: Path, traced_first: bool) -> dict[str, Any]:
    """Seconds of the base+head runs, plain and traced, for one case repository."""
    from bot.evidence.behaviour_stage import evidence_for
    from bot.evidence.runs import run_tests

    out: dict[str, Any] = {}
    order = ("traced", "plain") if traced_first else ("plain", "traced")
    for how in order:
        ctx = _context(repo, cfg, cache / how)  # a fresh test-result cache per way: nothing reused
        engine = evidence_for(ctx)
        hook_for = engine.trace_hook if (how == "traced" and engine is not None) else None
        if how == "traced" and (hook_for is None or not [c for c in engine.targets if not c.is_class]):
            out["skip"] = "no function among the changed callables: nothing is traced"
            return out
        runs = run_tests(ctx.change, cfg, cache_dir=cache / how, hook_for=hook_for)
        if not runs.compared:
            out["skip"] = f"tests not compared: {runs.unusable or 'not run'}"
            return out
        out[how] = runs.seconds.get("tests", 0.0)
        out[f"{how}_env"] = runs.seconds.get("env", 0.0)
    out["ratio"] = round(out["traced"] / out["plain"], 2) if out.get("plain") else None
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clone", action="append", required=True, help="project=path of a local clone")
    ap.add_argument("--data", type=Path, default=realworld.DATA)
    ap.add_argument("--half", choices=("tuning", "check", "all"), default="tuning")
    ap.add_argument("--kinds", default="hidden")
    ap.add_argument("--limit", type=int, default=8)
    ap.add_argument("--test-timeout", type=float, default=300.0)
    ap.add_argument("--out", type=Path, help="JSONL of per-case timings (appended)")
    args = ap.parse_args(argv)

    from bot.pipeline import run as runner

    clones = realworld._clones(args.clone)
    cases = [c for c in json.loads(args.data.read_text())["cases"] if c["kind"] in args.kinds.split(",")]
    cases = [c for c in cases if c["project"] in clones and rwcorpus.in_half(c, args.half)]
    cases = realworld.interleave(cases)[: args.limit] if args.limit else realworld.interleave(cases)
    overrides = {"patches.enabled": False, "sandbox.timeout": args.test_timeout}
    cfg = runner.load_config(None, None, overrides=overrides)
    rows: list[dict[str, Any]] = []
    for i, c in enumerate(cases):
        with tempfile.TemporaryDirectory(prefix="prereview-ovh-") as tmp:
            t0 = time.monotonic()
            try:
                repo = realworld.materialize(c, clones[c["project"]], Path(tmp) / "repo")
                row = {"id": c["id"], **time_case(repo, cfg, Path(tmp) / "cache", traced_first=i % 2 == 1)}
            except Exception as exc:  # a failing case is a figure, not the end of the run
                row = {"id": c["id"], "skip": f"error: {type(exc).__name__}: {exc}"[:200]}
            row["wall"] = round(time.monotonic() - t0, 1)
        rows.append(row)
        if args.out:
            with args.out.open("a") as sink:
                sink.write(json.dumps(row) + "\n")
        shown = row.get("skip") or f"plain {row['plain']:.1f}s, traced {row['traced']:.1f}s ({row['ratio']}x)"
        print(
            f"[{i + 1}/{len(cases)}] {c['id'] if c.get('half') != 'check' else 'a check case'}: {shown}",
            file=sys.stderr,
        )
    print(summary(rows))


def summary(rows: list[dict[str, Any]]) -> str:
    timed = [r for r in rows if r.get("plain") and r.get("traced")]
    if not timed:
        return f"traced vs plain: no case timed ({len(rows)} skipped)"
    plain = statistics.median(r["plain"] for r in timed)
    traced = statistics.median(r["traced"] for r in timed)
    ratio = statistics.median(r["traced"] / r["plain"] for r in timed)
    return (
        f"traced vs plain (tests at base+head, {len(timed)} cases timed, {len(rows) - len(timed)} not): "
        f"median plain {plain:.1f}s, traced {traced:.1f}s, median ratio {ratio:.2f}x "
        f"(range {min(r['traced'] / r['plain'] for r in timed):.2f}-"
        f"{max(r['traced'] / r['plain'] for r in timed):.2f}x)"
    )


if __name__ == "__main__":
    main()
