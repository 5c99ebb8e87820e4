"""Review quality on the shared dev set (quixbugs, humanevalfix, secfix_py): the whole pipeline, or a
single-prompt baseline with the same model, over a stratified subset or the full set.

    python bench/quality.py --limit 30                      # quick stratified subset
    python bench/quality.py --datasets secfix --kinds bug   # one slice
    python bench/quality.py --full                          # every case (hours on a small CPU)
    python bench/quality.py --baseline --limit 30           # single prompt, no pipeline extras
    python bench/quality.py --report bench/out/run.jsonl    # figures of a finished or partial run
    python bench/quality.py --no-tests --datasets quixbugs,humanevalfix   # test files gone at base and head

Scoring (shared/bench/README.md): detection = a finding of severity >= medium within +-1 line of a marked
line (+-2 for secfix) on `bug` changes; quiet = no finding >= medium on `alt_N`/`fix` changes; CWE
agreement = a located finding with the case's exact CWE id. `--no-tests` deletes the test files (and test
data) from both commits, the realistic case where the change's tests do not catch the bug; "detections by
source" counts the sources of the located findings (tests = rule tests/broken, behaviour, each scanner by
name, model), and how many detections each source made alone. The prompt never sees the dataset, the case
id or the commit link: the PR title is empty and the file keeps its project path.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.findings import analyze  # noqa: E402
from bot.findings import chunks as context  # noqa: E402
from bot.forges.local import LocalForge  # noqa: E402
from bot.models import Message, Model  # noqa: E402
from bot.pipeline import run as runner  # noqa: E402
from bot.types import ChangeRef, ChangeRequest, Finding, severity_rank  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
import rulehits  # noqa: E402

BENCH = Path(os.environ.get("PREREVIEW_BENCH", ROOT.parent / "shared" / "bench"))
if not BENCH.is_dir():
    BENCH = Path("/work/shared/bench")
FOLDERS = {"quixbugs": "quixbugs", "humanevalfix": "humanevalfix", "secfix": "secfix_py"}
MEDIUM = severity_rank("medium")


# --- the cases ---------------------------------------------------------------------------------------


def cases(datasets: list[str], kinds: list[str], extra: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if "quixbugs" in datasets:
        d = BENCH / "quixbugs"
        alts = json.loads((d / "alternatives.json").read_text())
        for c in json.loads((d / "cases.json").read_text()):
            out.append(_case("quixbugs", c["program"], "bug", c["bug_lines_in_buggy"]))
            out.append(_case("quixbugs", c["program"], "fix", []))
            for a in alts:
                if a["program"] == c["program"] and a.get("tests_pass", True):
                    out.append(_case("quixbugs", c["program"], a["alt"].removesuffix(".py"), []))
    if "humanevalfix" in datasets:
        for c in json.loads((BENCH / "humanevalfix" / "cases.json").read_text()):
            out.append(_case("humanevalfix", c["case"], "bug", c["bug_lines_in_buggy"]))
            out.append(_case("humanevalfix", c["case"], "fix", []))
    if "secfix" in datasets:
        for line in (BENCH / "secfix_py" / "cases.jsonl").read_text().splitlines():
            c = json.loads(line)
            if c.get("extra") and not extra:
                continue
            out.append(_case("secfix", c["id"], "bug", c["vuln_lines"], cwe=_cwe(c["cwe"])))
            out.append(_case("secfix", c["id"], "fix", [], cwe=_cwe(c["cwe"])))
    return [c for c in out if _kind_group(c["kind"]) in kinds]


def _case(ds: str, case: str, kind: str, lines: list[int], cwe: str | None = None) -> dict[str, Any]:
    return {"dataset": ds, "case": case, "kind": kind, "lines": lines, "cwe": cwe}


def _kind_group(kind: str) -> str:
    return "alt" if kind.startswith("alt_") else kind


def _cwe(value: str | None) -> str | None:
    return f"CWE-{int(value.split('-')[1])}" if value else None


def stratified(items: list[dict[str, Any]], seed: int = 7) -> list[dict[str, Any]]:
    """Round-robin over (dataset, kind group), shuffled inside each group: any prefix is a balanced sample."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for c in items:
        groups[(c["dataset"], _kind_group(c["kind"]))].append(c)
    rng = random.Random(seed)
    for g in groups.values():
        rng.shuffle(g)
    order: list[dict[str, Any]] = []
    queues = [groups[k] for k in sorted(groups)]
    while any(queues):
        for q in queues:
            if q:
                order.append(q.pop(0))
    return order


# --- running one case --------------------------------------------------------------------------------


def make_repo(c: dict[str, Any], tmp: Path) -> tuple[Path, str]:
    out = tmp / f"{c['dataset']}-{c['kind']}"
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "mk_pr_repo.py"),
            c["dataset"],
            str(BENCH / FOLDERS[c["dataset"]]),
            c["case"],
            str(out),
            "--kind",
            c["kind"],
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return out, json.loads(proc.stdout)["changed_file"]


TEST_DATA = ("json_testcases/",)  # quixbugs' test inputs: only its tests read them


def strip_tests(repo: Path) -> Path:
    """The same two commits without the test files (and test data), as a new repo beside `repo`."""
    from bot.change.diff import is_test_path

    out = repo.with_name(repo.name + "-no-tests")
    out.mkdir()

    def g(where: Path, *a: str, data: bytes | None = None) -> bytes:
        ident = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]
        return subprocess.run(
            ["git", "-C", str(where), *ident, *a], check=True, capture_output=True, input=data
        ).stdout

    g(out, "init", "-q")
    for rev in ("HEAD^", "HEAD"):
        for p in g(out, "ls-files").decode().splitlines():
            (out / p).unlink()
        for p in g(repo, "ls-tree", "-r", "--name-only", rev).decode().splitlines():
            if is_test_path(p) or p.startswith(TEST_DATA):
                continue
            (out / p).parent.mkdir(parents=True, exist_ok=True)
            (out / p).write_bytes(g(repo, "show", f"{rev}:{p}"))
        g(out, "add", "-A")
        g(out, "commit", "-q", "--allow-empty", "-F", "-", data=g(repo, "log", "-1", "--format=%B", rev))
    return out


def fetch(repo: Path) -> ChangeRequest:
    change = LocalForge().fetch(ChangeRef("local", str(repo), base="HEAD^", head="HEAD"))
    return replace(change, title="")  # the bench commit subject names the case: never show it


def run_pipeline(
    change: ChangeRequest, cfg: Any, lazy: runner.LazyModel
) -> tuple[list[Finding], dict[str, Any]]:
    review = runner.review_change(change, cfg, model=lazy)
    st = review.stats
    return list(review.findings), {
        "prompt_tokens": st.prompt_tokens,
        "completion_tokens": st.completion_tokens,
        "seconds_model": st.seconds_model,
        "notes": list(review.notes),
    }


BASELINE_SYSTEM = (
    "You are a code reviewer. Review the following unified diff and report bugs and security "
    "vulnerabilities that the change introduces, as JSON. For each finding copy the offending added line "
    'into "quote", give its line number in the new file, a message, category, severity and CWE id for '
    'security issues. Return {"findings": []} when there is nothing wrong.'
)


def run_baseline(
    change: ChangeRequest, cfg: Any, lazy: runner.LazyModel, prompt: str = "plain"
) -> tuple[list[Finding], dict[str, Any]]:
    """One prompt with the raw diff: no scanners, no enclosing-function context, no verification."""
    model: Model = lazy()
    diff = change.diff
    schema = analyze.findings_schema()
    if prompt == "review":  # prereview's own system prompt, still one request on the raw diff
        system, user = analyze.system_prompt(), f"{change.diff_text}\nReturn the findings as JSON."
    else:
        system, user = BASELINE_SYSTEM, change.diff_text
    messages = [Message("system", system), Message("user", user)]
    completion = model.complete(
        messages, schema=schema, max_tokens=cfg.review.max_new_tokens, temperature=0.0
    )
    stats = {
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "seconds_model": round(completion.seconds, 3),
    }
    try:
        raw = json.loads(completion.text)["findings"]
    except (json.JSONDecodeError, KeyError, TypeError):
        return [], stats
    sections = tuple(context.Section(f.path, h, "", 0) for f in diff.files for h in f.hunks)
    chunk = context.Chunk(sections)
    out = []
    for r in raw:
        f = analyze.anchor_quote(r, chunk)
        if f is None and diff.files and isinstance(r.get("line"), int):  # keep the model's own line
            f = Finding(
                diff.files[0].path,
                r["line"],
                str(r.get("message", "")),
                str(r.get("severity", "medium")),
                str(r.get("category", "bug")),
                cwe=str(r.get("cwe") or "") or None,
            )
        if f is not None:
            out.append(f)
    return out, stats


def score(c: dict[str, Any], path: str, findings: list[Finding]) -> dict[str, Any]:
    strong = [f for f in findings if severity_rank(f.severity) >= MEDIUM]
    slack = 2 if c["dataset"] == "secfix" else 1
    on_lines = [
        f
        for f in findings
        if f.path == path and any(f.line - slack <= n <= f.last_line + slack for n in c["lines"])
    ]
    located = [f for f in on_lines if f in strong]
    return {
        "detected": bool(located) if c["kind"] == "bug" else None,
        "quiet": not strong if c["kind"] != "bug" else None,
        "cwe_ok": (any(f.cwe == c["cwe"] for f in located) if c["cwe"] and c["kind"] == "bug" else None),
        "n_findings": len(findings),
        "n_strong": len(strong),
        "sources": sorted({f.source for f in strong}),
        "detected_by": sorted({source_of(f) for f in located}) if c["kind"] == "bug" else [],
        "findings": [
            {
                "line": f.line,
                "severity": f.severity,
                "category": f.category,
                "cwe": f.cwe,
                "source": f.source,
                "rule_id": f.rule_id,
                "message": f.message[:160],
                "located": f in on_lines,  # at any severity (bench/rulehits.py)
            }
            for f in findings
        ],
    }


def source_of(f: Finding) -> str:
    """What found it: tests (a broken test), behaviour (base/head runs), a scanner by name, or the model."""
    if f.rule_id == "tests/broken":
        return "tests"
    return f.source or "model"


# --- figures -----------------------------------------------------------------------------------------


def _pct(num: int, den: int) -> str:
    return f"{100 * num / den:5.1f}% ({num}/{den})" if den else "   n/a"


def summarize(rows: list[dict[str, Any]]) -> str:
    lines = []

    def block(title: str, rs: list[dict[str, Any]]) -> None:
        bugs = [r for r in rs if r["kind"] == "bug"]
        quiet = [r for r in rs if r["kind"] != "bug"]
        cw = [r for r in bugs if r.get("cwe_ok") is not None]
        det = sum(bool(r["detected"]) for r in bugs)
        lines.append(
            f"{title:<22} detect {_pct(det, len(bugs)):<18}"
            f" quiet {_pct(sum(bool(r['quiet']) for r in quiet), len(quiet)):<18}"
            f" cwe {_pct(sum(bool(r['cwe_ok']) for r in cw), len(cw)):<18}"
            f" findings/change {sum(r['n_findings'] for r in rs) / max(1, len(rs)):4.2f}"
            f" (>=medium {sum(r['n_strong'] for r in rs) / max(1, len(rs)):4.2f})"
            f"  s/change {sum(r['seconds'] for r in rs) / max(1, len(rs)):5.1f}"
        )

    block("ALL", rows)
    block("bugs (quix+hef)", [r for r in rows if r["dataset"] in ("quixbugs", "humanevalfix")])
    for ds in ("quixbugs", "humanevalfix", "secfix"):
        rs = [r for r in rows if r["dataset"] == ds]
        if rs:
            block(ds, rs)
    for cwe in sorted({r["cwe"] for r in rows if r.get("cwe")}):
        block(f"  secfix {cwe}", [r for r in rows if r.get("cwe") == cwe])
    srcs: dict[str, int] = defaultdict(int)
    alone: dict[str, int] = defaultdict(int)
    for r in rows:
        if r["kind"] == "bug" and r["detected"]:
            by = r.get("detected_by", r["sources"])  # rows written before detected_by: strong sources
            for s in by:
                srcs[s] += 1
            if len(by) == 1:
                alone[by[0]] += 1
    lines.append(
        "detections by source (a change may count for several): "
        + ", ".join(f"{k} {v} (alone {alone[k]})" for k, v in sorted(srcs.items()))
    )
    errors = sum(1 for r in rows if r.get("error"))
    lines.append(f"changes: {len(rows)}  errors: {errors}")
    lines.append(
        rulehits.table(
            rows,
            corpus=lambda r: str(r["dataset"]),
            is_bug=lambda r: r["kind"] == "bug",
            located=lambda r, f: bool(f.get("located")),
        )
    )
    return "\n".join(lines)


def _key(r: dict[str, Any]) -> tuple[str, str, str]:
    return (r["dataset"], r["case"], r["kind"])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="quixbugs,humanevalfix,secfix")
    ap.add_argument("--kinds", default="bug,alt,fix", help="bug, alt (quixbugs alt_N), fix")
    ap.add_argument("--limit", type=int, default=30, help="first N of the stratified order (0 = all)")
    ap.add_argument("--full", action="store_true", help="every case (same as --limit 0)")
    ap.add_argument("--extra", action="store_true", help="include secfix cases marked extra")
    ap.add_argument("--baseline", action="store_true", help="single prompt, same model, no pipeline extras")
    ap.add_argument(
        "--baseline-prompt",
        choices=["plain", "review"],
        default="plain",
        help="baseline system prompt: a plain reviewer instruction, or prereview's own review prompt",
    )
    ap.add_argument("--model", help="catalog name or .gguf path (default: the config's, qwen2.5-coder-1.5b)")
    ap.add_argument("--config", type=Path, help="a .prereview.yml to review with")
    ap.add_argument("--out", type=Path, help="JSONL of per-change results (appended; --resume skips done)")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--report", type=Path, nargs="+", help="only print the figures of existing JSONL files")
    ap.add_argument("--common", type=Path, help="with --report: only the changes also in this JSONL")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--test-timeout",
        type=float,
        default=60.0,
        help="seconds before a test run is killed (the dev cases' tests take ~1 s; a bug may loop forever)",
    )
    ap.add_argument(
        "--shard",
        default="0/1",
        help="K/N: only every N-th change starting at K (run N processes, e.g. one per core, with own --out)",
    )
    ap.add_argument("--patches", action="store_true", help="also propose + verify patches (slow)")
    ap.add_argument("--scanners-only", action="store_true", help="scanners alone: a model that finds nothing")
    ap.add_argument(
        "--no-tests",
        action="store_true",
        help="delete the test files (and test data) from both commits: no test catches the bug",
    )
    args = ap.parse_args(argv)

    if args.report:
        rows = [json.loads(x) for f in args.report for x in f.read_text().splitlines() if x.strip()]
        rows = list({_key(r): r for r in rows}.values())  # a change in several files counts once (last)
        if args.common:
            other = {_key(json.loads(x)) for x in args.common.read_text().splitlines() if x.strip()}
            rows = [r for r in rows if _key(r) in other]
        modes = sorted({r.get("mode", "?") for r in rows})
        print(f"{'/'.join(modes)} · model {rows[0]['model'] if rows else '?'} · {len(rows)} changes")
        print(summarize(rows))
        return
    todo = stratified(cases(args.datasets.split(","), args.kinds.split(","), args.extra), args.seed)
    if not args.full and args.limit:
        todo = todo[: args.limit]
    k, n = (int(x) for x in args.shard.split("/"))
    todo = todo[k::n]
    overrides: dict[str, Any] = {
        "model.name": args.model,
        "patches.enabled": bool(args.patches),
        "sandbox.timeout": args.test_timeout,
    }
    if args.scanners_only:
        silent = ROOT / "bench" / "out" / "silent-model.json"
        silent.parent.mkdir(parents=True, exist_ok=True)
        silent.write_text(json.dumps({"replies": [], "default": {"findings": []}}))
        overrides |= {
            "model.backend": "scripted",
            "model.name": "scanners-only",
            "model.script": str(silent),
            "tests": "off",
            "scanners.self_verify": False,
        }
    cfg = runner.load_config(None, None, config_file=args.config, overrides=overrides)
    mode = (
        ("baseline" if args.baseline_prompt == "plain" else "baseline-review")
        if args.baseline
        else "pipeline"
    ) + ("-no-tests" if args.no_tests else "")
    out = args.out or ROOT / "bench" / "out" / f"quality-{mode}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    rows: list[dict[str, Any]] = []
    if args.resume and out.exists():
        rows = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
        done = {(r["dataset"], r["case"], r["kind"]) for r in rows}
    lazy = runner.LazyModel(cfg, runner.Quiet())
    review = partial(run_baseline, prompt=args.baseline_prompt) if args.baseline else run_pipeline
    print(f"{mode}: {len(todo)} changes, model {cfg.model.name}, results -> {out}", file=sys.stderr)
    with out.open("a") as sink:
        for i, c in enumerate(todo, 1):
            if (c["dataset"], c["case"], c["kind"]) in done:
                continue
            with tempfile.TemporaryDirectory(prefix="prereview-q-") as tmp:
                repo, path = make_repo(c, Path(tmp))
                if args.no_tests:
                    repo = strip_tests(repo)
                t0 = time.monotonic()
                row = {**c, "mode": mode, "model": cfg.model.name}
                try:
                    found, stats = review(fetch(repo), cfg, lazy)
                    row |= score(c, path, found) | stats
                except Exception as exc:  # a failing case is a figure, not the end of the run
                    row |= {
                        "error": f"{type(exc).__name__}: {exc}"[:300],
                        "detected": False if c["kind"] == "bug" else None,
                        "quiet": None if c["kind"] == "bug" else False,
                        "cwe_ok": None,
                        "n_findings": 0,
                        "n_strong": 0,
                        "sources": [],
                        "findings": [],
                    }
                row["seconds"] = round(time.monotonic() - t0, 2)
            rows.append(row)
            sink.write(json.dumps(row) + "\n")
            sink.flush()
            mark = {True: "hit", False: "MISS", None: ""}[row["detected"]] or (
                "quiet" if row["quiet"] else "NOISY"
            )
            print(
                f"[{i}/{len(todo)}] {c['dataset']} {c['case']} {c['kind']}: {mark} "
                f"({row['n_strong']} >=medium, {row['seconds']}s)",
                file=sys.stderr,
            )
    print(f"\n{mode} · model {cfg.model.name} · {len(rows)} changes · {time.strftime('%Y-%m-%d')}")
    print(summarize(rows))


if __name__ == "__main__":
    main()
