"""Model + scanner findings -> one list: dedupe by location and meaning, self-verify, explain scanner hits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import prompts
from ..change.diff import Diff
from ..models import Message, Model
from ..models.answer import ask_json
from ..models.meter import Meter
from ..pipeline.context import ReviewContext
from ..types import Finding, severity_rank
from . import analyze, chunks, plausible
from . import translate as translation
from .language import instruction as language_instruction
from .rank import finalize

FileReader = Callable[[str], "str | None"]
ModelFactory = Callable[[], Model]

# among scanners, the more specific rule wins
_PRIORITY = {"secrets": 0, "semgrep": 1, "bandit": 2, "safeguards": 3, "unreachable": 4}


def strength(f: Finding) -> tuple[int, int]:
    """Deterministic scanner evidence beats a model opinion; then the higher severity."""
    return (0 if f.source == "model" else 1, severity_rank(f.severity))


def same_place(a: Finding, b: Finding, slack: int = 1) -> bool:
    return (
        a.path == b.path
        and a.side == b.side
        and a.line - slack <= b.last_line
        and b.line - slack <= a.last_line
    )


def same_meaning(a: Finding, b: Finding) -> bool:
    if a.cwe and b.cwe:
        return a.cwe == b.cwe
    if a.source != "model" and b.source != "model":
        return a.rule_id == b.rule_id or a.category == b.category
    return a.category == b.category


def merge(findings: list[Finding]) -> list[Finding]:
    """Collapse findings at the same place that mean the same thing; keep the stronger evidence and the
    highest severity, and let a model's words accompany a scanner rule it agrees with."""
    ordered = sorted(findings, key=lambda f: (-strength(f)[0], _PRIORITY.get(f.source, 9), -strength(f)[1]))
    kept: list[Finding] = []
    for f in ordered:
        twin = next((k for k in kept if same_place(k, f) and same_meaning(k, f)), None)
        if twin is None:
            kept.append(f)
            continue
        i = kept.index(twin)
        sev = twin.severity if severity_rank(twin.severity) >= severity_rank(f.severity) else f.severity
        kept[i] = twin.with_(severity=sev, cwe=twin.cwe or f.cwe)
    return kept


# --- self-verification: a second, short model check of the model's own findings ---------------------

# The check reuses the review's system prompt, so the model's prompt cache (a shared prefix) still holds
# it; the task is in the user message.
VERIFY_TASK = """Now double-check one claim another reviewer made about this code.
Does the claim describe a real defect in the added code that misbehaves at run time (wrong result, crash,
or an exploitable security hole)? Answer "rejected" when the code is actually correct, when the claim is
vague, about style, or does not match the quoted line; else "confirmed". Return JSON."""


def verify_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": ["confirmed", "rejected"]}},
        "required": ["verdict"],
        "additionalProperties": False,
    }


def verify_prompt(f: Finding, code: str) -> str:
    claim = f"line {f.line}: [{f.category}{', ' + f.cwe if f.cwe else ''}] {f.message}"
    return (
        f"<untrusted>\nFile: {f.path}\n{code}\n</untrusted>\n"
        f"Claim about the line `{(f.quote or '').strip()[:160]}`:\n{claim}\n\n{VERIFY_TASK}"
    )


def self_verify(f: Finding, model: Model, code: str, system: str) -> Finding:
    """Confirmed findings stay as they are; rejected ones drop to severity low."""
    messages = [Message("system", system), Message("user", verify_prompt(f, code))]
    data = _ask(model, messages, verify_schema(), max_tokens=16)
    if data is None or data.get("verdict") != "rejected":
        return f
    return f.with_(severity="low", evidence="self-check: not confirmed")


# --- plain-words explanations of scanner hits --------------------------------------------------------


def explain_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"explanation": {"type": "string"}},
        "required": ["explanation"],
        "additionalProperties": False,
    }


def explain(f: Finding, model: Model, code: str, language: str = "") -> Finding:
    user = (
        f"<untrusted>\nFile: {f.path}\n{code}\n</untrusted>\n"
        f"Scanner rule {f.rule_id} ({f.cwe or 'no CWE'}) on line {f.line}: {f.message}\n"
        "Explain it. Return JSON."
    )
    system = prompts.load("explain_scanner") + language_instruction(language)
    data = _ask(model, [Message("system", system), Message("user", user)], explain_schema(), 160)
    text = str((data or {}).get("explanation", "")).strip()
    return f.with_(message=f"{f.message}\n\n{text}") if text else f


def _ask(
    model: Model, messages: list[Message], schema: dict[str, Any], max_tokens: int
) -> dict[str, Any] | None:
    return ask_json(model, messages, schema, max_tokens=max_tokens).data  # unreadable: changes nothing


# --- the stage as the runner calls it ----------------------------------------------------------------


def code_around(diff: Diff, f: Finding, read_head: FileReader) -> str:
    """The hunk holding the finding, widened to its enclosing function, as the review prompt shows it."""
    fd = diff.file(f.path)
    text = read_head(f.path)
    lines = text.splitlines() if text is not None else None
    if fd is not None:
        for h in fd.hunks:
            nos = [ln.new_no for ln in h.lines if ln.new_no is not None]
            if nos and min(nos) <= f.line <= max(nos):
                return chunks.render_section(f.path, h, lines)
    if lines is None:
        return ""
    lo, hi = max(1, f.line - 8), min(len(lines), f.line + 8)
    return "\n".join(f"{n:>5}   {lines[n - 1]}" for n in range(lo, hi + 1))


def _lines(text: str | None) -> list[str] | None:
    return text.split("\n") if text is not None else None


class MergeStage:
    """Plausibility rules, merge by place and meaning, self-verify the model's own findings, explain
    scanner hits when asked; then rank and cap again."""

    name = "merge"

    def run(self, ctx: ReviewContext, findings: list[Finding]) -> list[Finding]:
        sc, diff, read_head = ctx.cfg.scanners, ctx.diff, ctx.read_head
        if sc.plausibility:
            findings = [plausible.check(f, _lines(read_head(f.path))) for f in findings]
        findings = merge(findings)
        floor = severity_rank("medium")
        todo_verify = [
            f
            for f in findings
            if sc.self_verify
            and f.source == "model"
            and f.category in sc.verify_categories
            and severity_rank(f.severity) >= floor
        ]
        todo_explain = [f for f in findings if sc.explain_scanner_findings and f.source != "model"][:5]
        if todo_verify or todo_explain:
            meter = Meter(ctx.model)  # self-checks and explanations count in the review's usage
            model = meter()
            system = analyze.system_prompt(ctx.cfg.review.instructions, ctx.cfg.review.language)
            done = {
                id(f): self_verify(f, model, code_around(diff, f, read_head), system) for f in todo_verify
            }
            lang = ctx.cfg.review.language
            done |= {id(f): explain(f, model, code_around(diff, f, read_head), lang) for f in todo_explain}
            findings = [done.get(id(f), f) for f in findings]
            meter.add_to(ctx.usage)
        return finalize(self._in_language(ctx, findings), diff, ctx.cfg)

    @staticmethod
    def _in_language(ctx: ReviewContext, findings: list[Finding]) -> list[Finding]:
        """review.language: the model's messages it wrote in English anyway, translated (one request)."""
        lang = ctx.cfg.review.language
        own = [f for f in findings if f.source == "model" and translation.needs(f.message, lang)]
        if not translation.wanted(lang) or not own:
            return findings
        meter = Meter(ctx.model)
        new = translation.translate(meter(), [f.message for f in own], lang)
        meter.add_to(ctx.usage)
        done = {id(f): f.with_(message=m) for f, m in zip(own, new, strict=True)}
        return [done.get(id(f), f) for f in findings]
