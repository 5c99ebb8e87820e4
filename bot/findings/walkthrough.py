"""The walkthrough (`/describe`, `review.walkthrough`): what a change does, one line per file, the risky
spots and the behaviour changes, from one grammar-constrained model request.

The same framing as the review: the change reaches the model already masked (`pipeline.run.build_context`),
inside `<untrusted>` with the instruction never to follow it, and the answer is masked again. The JSON
schema lists the changed files as the required keys of `files`, so the grammar makes the model name
every file it was shown, exactly once, and no other; risky spots must name a changed file and a line of
its diff, else they are dropped. Files whose diff does not fit the context are listed with their size,
marked as not summarised.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .. import prompts
from ..change import redact
from ..change.diff import Diff, FileDiff, render_hunk
from ..models import Message, Model
from ..models.answer import ask_json
from ..types import ChangeRequest, FileNote, RiskSpot, Walkthrough
from .language import instruction as language_instruction

MAX_FILES = 40  # files summarised by the model; more are listed with their size only
MAX_RISKS = 3
MAX_TOKENS = 700


def walkthrough_schema(paths: list[str]) -> dict[str, Any]:
    """`files` has exactly the shown paths as required keys: the grammar cannot skip or invent one."""
    return {
        "type": "object",
        "properties": {
            "summary": {"type": "string"},
            "files": {
                "type": "object",
                "properties": {p: {"type": "string"} for p in paths},
                "required": list(paths),
                "additionalProperties": False,
            },
            "risks": {
                "type": "array",
                "maxItems": MAX_RISKS,
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "enum": list(paths)},
                        "line": {"type": "integer"},
                        "why": {"type": "string"},
                    },
                    "required": ["path", "line", "why"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["summary", "files", "risks"],
        "additionalProperties": False,
    }


def _size(f: FileDiff) -> str:
    added = sum(1 for h in f.hunks for ln in h.lines if ln.kind == "+")
    removed = sum(1 for h in f.hunks for ln in h.lines if ln.kind == "-")
    return f"{f.status}, +{added} −{removed}"


def messages_for(
    change: ChangeRequest,
    diff: Diff,
    *,
    budget: int,
    count: Callable[[str], int],
    language: str = "",
) -> tuple[list[Message], list[str], list[FileDiff]]:
    """The request, the paths shown to the model (whole files, in order, while they fit `budget` tokens)
    and the files left out."""
    system = prompts.load("walkthrough") + language_instruction(language)
    head = f"Pull request title: {change.title.strip()[:200]}\n"
    if change.body.strip():
        head += f"Description:\n{change.body.strip()[:1500]}\n"
    tail = "\n</untrusted>\nDescribe the change as JSON."
    room = budget - count(system) - count(head) - count(tail) - 40
    shown: list[str] = []
    parts: list[str] = []
    left_out: list[FileDiff] = []
    for f in diff.files:
        text = f"--- {f.path} ({_size(f)})\n" + "\n".join(render_hunk(f, h) for h in f.hunks)
        cost = count(text) + 24  # its key and line in the answer
        if f.is_binary or not f.hunks or cost > room or len(shown) >= MAX_FILES:
            left_out.append(f)
            continue
        parts.append(text)
        shown.append(f.path)
        room -= cost
    user = "<untrusted>\n" + head + "\n".join(parts) + tail
    return [Message("system", system), Message("user", user)], shown, left_out


def from_answer(data: dict[str, Any], diff: Diff, shown: list[str]) -> Walkthrough:
    """The model's JSON (valid for `walkthrough_schema(shown)`) as a Walkthrough."""
    files = tuple(FileNote(p, " ".join(str(data["files"][p]).split())) for p in shown)
    risks = []
    for r in data["risks"]:
        if diff.has_line(r["path"], int(r["line"])):  # anchored on a line of the diff, or dropped
            risks.append(RiskSpot(r["path"], int(r["line"]), " ".join(str(r["why"]).split())))
    return Walkthrough(summary=" ".join(str(data["summary"]).split()), files=files, risks=tuple(risks))


def describe(
    change: ChangeRequest,
    diff: Diff,
    model: Model,
    *,
    language: str = "",
    mask: Callable[[str], str] | None = None,
    behaviour: tuple[str, ...] = (),
) -> Walkthrough:
    """One model request -> the Walkthrough. `change`/`diff` must already be masked (build_context);
    `mask` masks the answer again. A cut or invalid answer gives the file list with a note, never a
    crash. `behaviour`: observed base/head behaviour changes (evidence), shown as they are."""
    mask = mask or redact.mask_patterns
    budget = max(512, model.n_ctx - MAX_TOKENS - 64)
    messages, shown, left_out = messages_for(
        change, diff, budget=budget, count=model.count_tokens, language=language
    )
    omitted = tuple(FileNote(f.path, f"({_size(f)}; not summarised: too long or binary)") for f in left_out)
    if not shown:
        return Walkthrough("", omitted, (), behaviour, note="No file's diff fits the model's context.")
    schema = walkthrough_schema(shown)
    answer = ask_json(model, messages, schema, max_tokens=MAX_TOKENS)
    if answer.cut:
        error = "the model's walkthrough was cut at the token limit"
    elif answer.data is None:
        error = f"the walkthrough is not valid JSON for its schema ({answer.error})"
    else:
        w = _in_language(from_answer(answer.data, diff, shown), model, language)
        return Walkthrough(
            summary=mask(w.summary),
            files=tuple(FileNote(n.path, mask(n.text)) for n in w.files) + omitted,
            risks=tuple(RiskSpot(r.path, r.line, mask(r.why)) for r in w.risks),
            behaviour=behaviour,
            model=model.name,
        )
    sizes = tuple(FileNote(p, f"({_size(diff.file(p))})") for p in shown if diff.file(p) is not None)  # type: ignore[arg-type]
    return Walkthrough("", sizes + omitted, (), behaviour, note=f"No walkthrough: {error}.", model=model.name)


def _in_language(w: Walkthrough, model: Model, language: str) -> Walkthrough:
    """review.language: the lines the model wrote in English anyway, translated (one request)."""
    from . import translate

    if not translate.wanted(language):
        return w
    texts = [w.summary, *(n.text for n in w.files), *(r.why for r in w.risks)]
    new = translate.translate(model, texts, language)
    k = len(w.files)
    return replace(
        w,
        summary=new[0],
        files=tuple(FileNote(n.path, t) for n, t in zip(w.files, new[1 : 1 + k], strict=True)),
        risks=tuple(RiskSpot(r.path, r.line, t) for r, t in zip(w.risks, new[1 + k :], strict=True)),
    )


def observed_behaviour(changes: Any) -> tuple[str, ...]:
    """The behaviour stage's intended changes (`ctx.behaviour`: BehaviourChange) as one line each."""
    return tuple(f"{c.call} in {c.path}: {c.before} → {c.after}" for c in changes or ())


class WalkthroughStage:
    """`review.walkthrough: true`: the last stage describes the change for the summary comment."""

    name = "walkthrough"

    def run(self, ctx: Any, findings: list[Any]) -> list[Any]:
        from ..models import ModelError

        if not ctx.diff.files:
            return findings
        from ..models.meter import Meter

        meter = Meter(ctx.model)
        try:
            ctx.walkthrough = describe(
                ctx.change,
                ctx.diff,
                meter(),
                language=ctx.cfg.review.language,
                behaviour=observed_behaviour(ctx.behaviour),
            )
        except ModelError as exc:
            ctx.notes.append(f"No walkthrough: the model failed ({exc}).")
        meter.add_to(ctx.usage)
        return findings
