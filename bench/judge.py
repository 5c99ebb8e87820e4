"""The behaviour judge on its own: the differences no rule decides, and how a model judges them.

    python bench/judge.py collect --out bench/out/judge-dev.jsonl -- --no-tests --full --scanners-only
    python bench/judge.py eval bench/out/judge-dev.jsonl [--model qwen2.5-coder-1.5b]

`collect` runs bench/quality.py (the arguments after `--`) and writes down every set of differences the
rules left to the model (what `judge.decide` is given), with the change's kind: on a `bug` change
base's results are the right ones; on `alt`/`fix` changes head's are (the change is the intended one).
`eval` puts each set to the model as `behaviour.judge: probabilities` does (`plausibility.margin`) and
prints the margin by which base's results read likelier than head's, then, for each threshold, how many
sets on bug changes would be judged bugs (want: many) and how many on alt/fix changes (want: none).
`plausibility.BUG_MARGIN` is the threshold the review uses. `eval --ask` runs the default verdict path instead
and counts its "bug" verdicts. Seconds are the model's alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bot.config import Config  # noqa: E402
from bot.evidence.behaviour import judge, plausibility  # noqa: E402
from bot.evidence.behaviour.callables import Changed  # noqa: E402
from bot.evidence.behaviour.compare import Difference  # noqa: E402
from bot.models import registry  # noqa: E402


def collect(out: Path, quality_args: list[str]) -> None:
    import quality

    pending: list[dict[str, Any]] = []
    decide, score = judge.decide, quality.score

    def recording(c: Changed, diffs: Any, *a: Any, **kw: Any) -> tuple[str, str, float]:
        pending.append(
            {
                "callable": {k: v for k, v in asdict(c).items() if k in _CHANGED_KEYS},
                "diffs": [_diff(d) for d in diffs],
                "title": a[1] if len(a) > 1 else kw.get("title", ""),
                "body": a[2] if len(a) > 2 else kw.get("body", ""),
            }
        )
        return decide(c, diffs, *a, **kw)

    def scoring(c: dict[str, Any], path: str, findings: Any) -> dict[str, Any]:
        with out.open("a", encoding="utf-8") as fh:
            for rec in pending:
                rec.update(dataset=c["dataset"], case=c["case"], kind=c["kind"])
                fh.write(json.dumps(rec) + "\n")
        pending.clear()
        return score(c, path, findings)

    judge.decide = recording  # type: ignore[assignment]
    quality.score = scoring  # type: ignore[assignment]
    quality.main(quality_args)


_CHANGED_KEYS = ("path", "qualname", "kind", "signature", "docstring", "via")


def _diff(d: Difference) -> dict[str, Any]:
    return {"call": d.call, "origin": d.origin, "before": d.before, "after": d.after, "variant": d.variant}


def _changed(rec: dict[str, Any]) -> Changed:
    c = rec["callable"]
    return Changed(
        path=c["path"],
        qualname=c["qualname"],
        kind=c["kind"],
        head_span=None,
        base_span=None,
        anchor=1,
        signature=c["signature"],
        docstring=c["docstring"],
        params=(),
        is_method=False,
        is_async=False,
        is_generator=False,
        via=c.get("via", ""),
    )


def _differences(rec: dict[str, Any]) -> list[Difference]:
    return [
        Difference(
            rec["callable"]["qualname"],
            d["call"],
            d["origin"],
            d["before"],
            d["after"],
            {},
            {},
            variant=d["variant"],
        )
        for d in rec["diffs"]
    ]


def evaluate_asking(path: Path, m: Any) -> None:
    """The same sets through the verdict question and the blind comparisons (`--ask`)."""
    recs = _records(path)
    verdicts: dict[str, list[str]] = {"bug": [], "other": []}
    seconds = 0.0
    for i, rec in enumerate(recs, 1):
        group = "bug" if rec["kind"] == "bug" else "other"
        verdict, reason, took = judge.decide(
            _changed(rec), _differences(rec), lambda: m, rec["title"], rec["body"]
        )
        seconds += took
        verdicts[group].append(verdict)
        print(f"[{i}/{len(recs)}] {rec['dataset']} {rec['case']} {rec['kind']}: {verdict} ({reason[:80]})")
    for group, vs in verdicts.items():
        print(f"{group} sets judged bug: {vs.count('bug')}/{len(vs)} {_pct(vs.count('bug'), len(vs))}")
    if recs:
        print(f"model seconds: {seconds:.1f} ({seconds / len(recs):.1f} per set)")


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def evaluate(path: Path, model_name: str | None, thresholds: list[float], ask: bool = False) -> None:
    cfg = Config()
    if model_name:
        cfg = cfg.model_copy(update={"model": cfg.model.model_copy(update={"name": model_name})})
    m = registry.create(cfg.model)
    if ask:
        evaluate_asking(path, m)
        return
    recs = _records(path)
    margins: list[tuple[str, float]] = []
    seconds = 0.0
    for i, rec in enumerate(recs, 1):
        group = "bug" if rec["kind"] == "bug" else "other"
        got = plausibility.margin(
            _changed(rec), _differences(rec), m, rec["title"], rec["body"], judge._function(_changed(rec))
        )
        if got is None:
            raise SystemExit(f"{cfg.model.name} gives no token probabilities: nothing to measure")
        margin, took = got
        seconds += took
        margins.append((group, margin))
        first = rec["diffs"][0]
        print(
            f"[{i}/{len(recs)}] {rec['dataset']} {rec['case']} {rec['kind']}: {margin:+.2f}"
            f"  ({first['call'][:50]}: {first['before'][:30]} -> {first['after'][:30]})",
            flush=True,
        )
    bugs = [x for g, x in margins if g == "bug"]
    other = [x for g, x in margins if g == "other"]
    print(f"\n{len(bugs)} difference sets on bug changes, {len(other)} on alt/fix changes")
    print("margin >= T -> 'bug'   T     bug sets judged bug   alt/fix sets judged bug")
    for t in thresholds:
        hit = sum(x >= t for x in bugs)
        noise = sum(x >= t for x in other)
        hits, noisy = (
            f"{hit}/{len(bugs)} {_pct(hit, len(bugs))}",
            f"{noise}/{len(other)} {_pct(noise, len(other))}",
        )
        print(f"{'':24s}{t:4.1f}  {hits:>20s}  {noisy:>22s}")
    if margins:
        print(f"model seconds: {seconds:.1f} ({seconds / len(margins):.1f} per set)")


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}%" if d else "-"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    rest: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, rest = argv[:i], argv[i + 1 :]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--out", type=Path, required=True)
    e = sub.add_parser("eval")
    e.add_argument("path", type=Path)
    e.add_argument("--model")
    e.add_argument("--thresholds", default="0.5,1,1.5,2,3", help="margins to print the figures at")
    e.add_argument("--ask", action="store_true", help="the default verdict path (behaviour.judge: verdict)")
    args = ap.parse_args(argv)
    if args.cmd == "collect":
        collect(args.out, rest)
    else:
        evaluate(args.path, args.model, [float(x) for x in args.thresholds.split(",")], args.ask)


if __name__ == "__main__":
    main()
