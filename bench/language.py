"""review.language with a real model: the share of the model's texts written in the asked language, as
the model writes them and after the translate pass (prints figures; no assertions).

For each dev-set change with a bug (quixbugs, humanevalfix, secfix_py; `--cases` of them, balanced) and
each language, with `review.language` set:
  - findings: the review's model stage (`bot.findings.model_review.run`), then
    `bot.findings.translate.translate` on its messages (what the merge stage does);
  - walkthrough: `bot.findings.walkthrough.describe` (summary, one line per file, risky spots), whose
    translate pass is recorded as it runs.
Texts are classified by `bot.findings.language.written_in` (script share for ja/zh/ko/ru/..., common
words against English for de/fr/es/it/pt/nl); those it cannot tell (too little prose) are counted apart.

    python bench/language.py --cases 6 --languages de,fr,ja --model qwen2.5-coder-0.5b
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from quality import cases, make_repo, stratified  # noqa: E402

from bot.change import git  # noqa: E402
from bot.config import build  # noqa: E402
from bot.findings import model_review, translate, walkthrough  # noqa: E402
from bot.findings.language import written_in  # noqa: E402
from bot.forges.local import LocalForge  # noqa: E402
from bot.pipeline.run import LazyModel  # noqa: E402
from bot.progress import Quiet  # noqa: E402
from bot.types import ChangeRef  # noqa: E402


def _tally(messages: list[str], lang: str) -> Counter[str]:
    return Counter({True: "in", False: "other", None: "unclear"}[written_in(m, lang)] for m in messages)


def _share(c: Counter[str]) -> str:
    told = c["in"] + c["other"]
    pct = f"{100 * c['in'] / told:5.1f}%" if told else "   n/a"
    return f"{pct} ({c['in']}/{told}; {c['unclear']} unclear)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=6)
    ap.add_argument("--languages", default="de,fr,ja")
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    args = ap.parse_args()
    picked = [c for c in stratified(cases(["quixbugs", "humanevalfix", "secfix"], ["bug"], False))]
    picked = picked[: args.cases]
    langs = [x.strip() for x in args.languages.split(",") if x.strip()]
    base = build({"model": {"name": args.model}, "scanners": {"self_verify": False}}, env={})
    model = LazyModel(base, Quiet())
    kinds = ("findings", "walkthrough")
    totals = {(k, x): (Counter(), Counter()) for k in kinds for x in langs}  # type: ignore[var-annotated]
    seen: list[tuple[list[str], list[str]]] = []
    real = translate.translate

    def recorded(m, texts, code):  # type: ignore[no-untyped-def]
        out = real(m, texts, code)
        seen.append((list(texts), list(out)))
        return out

    translate.translate = recorded  # type: ignore[assignment]
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="prereview-lang-") as tmp:
        for i, c in enumerate(picked):
            repo, _ = make_repo(c, Path(tmp) / str(i))
            change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))
            for lang in langs:
                cfg = base.model_copy(update={"review": base.review.model_copy(update={"language": lang})})
                review = model_review.run(
                    change,
                    cfg,
                    model_factory=model,
                    read_head=lambda p, r=repo, h=change.head_sha: git.show(r, h, p),
                )
                raw = [f.message for f in review.findings]
                pairs = {"findings": (raw, translate.translate(model(), raw, lang) if raw else [])}
                seen.clear()
                walkthrough.describe(change, change.diff, model(), language=lang)
                pairs["walkthrough"] = seen[-1] if seen else ([], [])
                for kind, (before, after) in pairs.items():
                    b, a = _tally(before, lang), _tally(after, lang)
                    totals[(kind, lang)][0].update(b)
                    totals[(kind, lang)][1].update(a)
                    print(
                        f"{c['dataset']}/{c['case']} {lang} {kind}: {len(before)} text(s), in {lang}: "
                        f"{b['in']} -> {a['in']}",
                        flush=True,
                    )
    print(f"\nmodel {model().name}, {len(picked)} change(s), {time.monotonic() - t0:.0f}s")
    for (kind, lang), (before, after) in totals.items():
        print(f"{lang} {kind:11}: as written {_share(before)}  ->  after the translate pass {_share(after)}")


if __name__ == "__main__":
    main()
