"""Runtime benchmark for the core review pipeline (prints figures; no assertions).

Measures, in one process on this machine with one loaded model:
  1. raw llama.cpp prompt-processing and generation tokens/s (no pipeline, no grammar);
  2. for a handful of ../shared/bench changes: review wall time, prompt/completion tokens, the overhead
     ratio = wall / (prompt_tokens / raw_pp + completion_tokens / raw_tg), prompt tokens evaluated after
     KV prefix reuse, prompt tokens per changed line;
  3. the whole review (scanners, tests, patches on: the defaults) of the same changes: wall time, the
     seconds per pipeline stage (stats.stages), and the end-to-end ratio
     wall / (model tokens at raw speed + the test runs' own seconds) — target <= 1.3;
  4. peak RSS against model file + KV cache + 300 MB.

usage: python bench/perf.py [--model NAME] [--cases quixbugs:gcd,humanevalfix:002_truncate_number]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot import config as config_mod  # noqa: E402
from bot.forges.local import LocalForge  # noqa: E402
from bot.models.catalog import resolve  # noqa: E402
from bot.models.llama_cpp import LlamaCppModel  # noqa: E402
from bot.pipeline.run import review_change  # noqa: E402
from bot.types import ChangeRef  # noqa: E402

SHARED = ROOT.parent / "shared" / "bench"
DEFAULT_CASES = (
    "quixbugs:gcd,quixbugs:kth,quixbugs:shunting_yard,humanevalfix:002_truncate_number,"
    "humanevalfix:037_sort_even,secfix:CWE-022-060c812ff4"
)


def raw_speed(model: LlamaCppModel, n_prompt: int = 512, n_gen: int = 64) -> tuple[float, float]:
    llm = model._llm
    text = "def add(a, b):\n    return a + b\n\n" * 200
    toks = llm.tokenize(text.encode(), add_bos=False)[:n_prompt]
    best_pp = best_tg = 0.0
    for _ in range(3):  # the first round warms up buffers and caches; keep the best of the rest
        llm.reset()
        t = time.perf_counter()
        llm.eval(toks)
        best_pp = max(best_pp, len(toks) / (time.perf_counter() - t))
        t = time.perf_counter()
        for i in range(n_gen):
            llm.eval([toks[i]])
        best_tg = max(best_tg, n_gen / (time.perf_counter() - t))
    llm.reset()
    return best_pp, best_tg


def grammar_cost(model: LlamaCppModel, max_tokens: int = 160) -> dict[str, float]:
    """Generation tokens/s for one findings answer: no grammar, prereview's grammar path, and
    llama-cpp-python's own grammar sampler. The prompt is evaluated once beforehand (KV prefix reuse),
    so the times are generation only."""
    from llama_cpp import LlamaGrammar

    from bot.findings.analyze import findings_schema
    from bot.models import Message

    schema = findings_schema()
    msgs = [
        Message("system", "You review code. Report every defect as JSON findings; be thorough."),
        Message(
            "user",
            "x = eval(input())\nq = 'SELECT * FROM t WHERE id=%s' % x\nos.system('rm ' + x)\n"
            "Return the findings as JSON.",
        ),
    ]
    prompt = model._format(msgs)
    out: dict[str, float] = {}

    def run(label: str, fn) -> None:
        fn()  # warm: evaluates the prompt
        t = time.perf_counter()
        n = fn()
        out[label] = n / (time.perf_counter() - t)

    run("no grammar", lambda: model.complete(msgs, max_tokens=max_tokens).completion_tokens)
    run(
        "prereview grammar",
        lambda: model.complete(msgs, schema=schema, max_tokens=max_tokens).completion_tokens,
    )
    grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
    run(
        "llama-cpp-python grammar",
        lambda: model._llm.create_completion(prompt, grammar=grammar, max_tokens=max_tokens, temperature=0.0)[
            "usage"
        ]["completion_tokens"],
    )
    return out


class _Recorder:
    """The loaded model, handed to the pipeline as its model factory; records prompt tokens evaluated."""

    def __init__(self, model: LlamaCppModel) -> None:
        self.model = model
        self.name, self.n_ctx = model.name, model.n_ctx
        self.evaluated = self.prompt = self.completion = 0

    def __call__(self) -> _Recorder:
        return self

    def count_tokens(self, text: str) -> int:
        return self.model.count_tokens(text)

    def complete(self, messages, **kw):  # type: ignore[no-untyped-def]
        c = self.model.complete(messages, **kw)
        self.evaluated += c.prompt_tokens_evaluated or c.prompt_tokens
        self.prompt += c.prompt_tokens
        self.completion += c.completion_tokens
        return c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--cases", default=DEFAULT_CASES)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()

    path = resolve(args.model, progress=lambda m: print(m, file=sys.stderr))
    t = time.perf_counter()
    model = LlamaCppModel(path, name=args.model)
    load_s = time.perf_counter() - t
    pp, tg = raw_speed(model)
    size_mb = path.stat().st_size / 1e6
    print(f"machine: {platform.machine()} {model.threads} threads, model {args.model} ({size_mb:.0f} MB)")
    print(f"load {load_s:.1f}s; raw prompt {pp:.1f} tok/s, raw generation {tg:.1f} tok/s")
    g = grammar_cost(model)
    print("generation tok/s: " + ", ".join(f"{k} {v:.1f}" for k, v in g.items()))
    # Model-stage figures: scanners and patches (other stages) are off so the ratio measures the runtime.
    data = {
        "scanners": {"secrets": False, "bandit": False, "patterns": False},
        "tests": "off",
        "patches": {"enabled": False},
    }
    cfg = config_mod.build(_known(data), env={})
    rows = []
    print(
        f"{'case':40} {'wall s':>7} {'prompt':>7} {'eval':>6} {'compl':>6} {'ratio':>6} {'r_eval':>6} "
        f"{'tok/line':>8} {'find':>4}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.cases.split(","):
            ds, case = spec.split(":", 1)
            folder = {"secfix": "secfix_py"}.get(ds, ds)
            out = Path(tmp) / case
            mk = [sys.executable, str(SHARED / "mk_pr_repo.py"), ds, str(SHARED / folder), case, str(out)]
            subprocess.run(mk, check=True, capture_output=True)
            change = LocalForge().fetch(ChangeRef("local", str(out)))
            rec = _Recorder(model)
            t = time.perf_counter()
            review = review_change(change, cfg, model=rec)  # type: ignore[arg-type]
            wall = time.perf_counter() - t
            s = review.stats
            ideal = s.prompt_tokens / pp + s.completion_tokens / tg
            ideal_eval = rec.evaluated / pp + s.completion_tokens / tg
            changed = sum(f.changed_lines for f in change.diff.files)
            row = {
                "case": spec,
                "wall_s": round(wall, 2),
                "prompt_tokens": s.prompt_tokens,
                "prompt_evaluated": rec.evaluated,
                "completion_tokens": s.completion_tokens,
                "ratio": round(wall / ideal, 3) if ideal else None,
                # stricter: only the prompt tokens llama.cpp really evaluated (after KV prefix reuse)
                "ratio_evaluated": round(wall / ideal_eval, 3) if ideal_eval else None,
                "prompt_tokens_per_changed_line": round(s.prompt_tokens / max(1, changed), 1),
                "findings": len(review.findings),
            }
            rows.append(row)
            print(
                f"{spec:40} {wall:7.1f} {s.prompt_tokens:7d} {rec.evaluated:6d} {s.completion_tokens:6d} "
                f"{_num(row['ratio']):>6} {_num(row['ratio_evaluated']):>6} "
                f"{row['prompt_tokens_per_changed_line']:8.1f} {len(review.findings):4d}"
                + ("" if s.chunks else f"  (nothing sent: {_skips(review)})")
            )
    whole = whole_reviews(args.cases, model, pp, tg)
    ratios = [r["ratio"] for r in rows if r["ratio"]]
    ratios_eval = [r["ratio_evaluated"] for r in rows if r["ratio_evaluated"]]
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kv_mb = _kv_mb(model)
    budget = path.stat().st_size / 1e6 + kv_mb + 300
    print(f"overhead ratio: median {statistics.median(ratios):.2f}, max {max(ratios):.2f} (target <= 1.15)")
    print(
        f"overhead ratio on evaluated prompt tokens: median {statistics.median(ratios_eval):.2f}, "
        f"max {max(ratios_eval):.2f}"
    )
    print(
        f"peak RSS {rss_mb:.0f} MB; model file + KV cache ({kv_mb:.0f} MB at n_ctx {model.n_ctx}) + 300 MB "
        f"= {budget:.0f} MB"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "raw_pp": pp,
                    "raw_tg": tg,
                    "rows": rows,
                    "whole": whole,
                    "rss_mb": rss_mb,
                    "budget_mb": budget,
                },
                indent=2,
            )
        )


def whole_reviews(cases: str, model: LlamaCppModel, pp: float, tg: float) -> list[dict]:
    """The default pipeline end to end: where each review's seconds go, and wall against the ideal."""
    cfg = config_mod.build({}, env={})
    rows = []
    print(f"\nwhole review (defaults): {'case':32} {'wall s':>7} {'ideal':>6} {'ratio':>6}  stages")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in cases.split(","):
            ds, case = spec.split(":", 1)
            folder = {"secfix": "secfix_py"}.get(ds, ds)
            out = Path(tmp) / case
            mk = [sys.executable, str(SHARED / "mk_pr_repo.py"), ds, str(SHARED / folder), case, str(out)]
            subprocess.run(mk, check=True, capture_output=True)
            change = LocalForge().fetch(ChangeRef("local", str(out)))
            rec = _Recorder(model)
            t = time.perf_counter()
            review = review_change(change, cfg, model=rec, cache_dir=Path(tmp) / "cache")  # type: ignore[arg-type]
            wall = time.perf_counter() - t
            s = review.stats
            # every model request of the review (self-checks and patches too) at raw speed, plus the tests
            ideal = rec.prompt / pp + rec.completion / tg + s.stages.get("tests", 0.0)
            row = {"case": spec, "wall_s": round(wall, 2), "ideal_s": round(ideal, 2), "stages": s.stages}
            row["ratio"] = round(wall / ideal, 3) if ideal else None
            rows.append(row)
            split = " · ".join(f"{k} {v:.1f}" for k, v in s.stages.items())
            print(f"{'':25}{spec:32} {wall:7.1f} {ideal:6.1f} {_num(row['ratio']):>6}  {split}")
    ratios = [r["ratio"] for r in rows if r["ratio"]]
    if ratios:
        print(
            f"end-to-end ratio: median {statistics.median(ratios):.2f}, max {max(ratios):.2f} (target <= 1.3)"
        )
    return rows


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _skips(review) -> str:  # type: ignore[no-untyped-def]
    return "; ".join(f"{k.path}: {k.reason}" for k in review.coverage.skipped) or "no reviewable hunk"


def _known(data: dict) -> dict:
    """Keep only the config keys this checkout knows (stages may not exist in older checkouts)."""
    fields = config_mod.Config.model_fields
    out = {}
    for k, v in data.items():
        if k not in fields:
            continue
        sub = fields[k].annotation
        if isinstance(v, dict) and hasattr(sub, "model_fields"):
            v = {kk: vv for kk, vv in v.items() if kk in sub.model_fields}
        out[k] = v
    return out


def _kv_mb(model: LlamaCppModel) -> float:
    md = model._llm.metadata
    arch = md.get("general.architecture", "llama")
    layers = int(md.get(f"{arch}.block_count", 0))
    heads_kv = int(md.get(f"{arch}.attention.head_count_kv", md.get(f"{arch}.attention.head_count", 0)))
    emb = int(md.get(f"{arch}.embedding_length", 0))
    heads = int(md.get(f"{arch}.attention.head_count", 1))
    head_dim = emb // max(1, heads)
    return layers * 2 * heads_kv * head_dim * 2 * model.n_ctx / 1e6


if __name__ == "__main__":
    main()
