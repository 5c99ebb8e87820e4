"""The model stage: prompt a chunk, get grammar-constrained JSON findings, anchor them by quote."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from .. import prompts
from ..models import Completion, Message, Model
from ..models.answer import ask_json
from ..types import CATEGORIES, SEVERITIES, Finding
from .chunks import Chunk, Section
from .language import instruction as language_instruction

MAX_FINDINGS_PER_CHUNK = 5


def findings_schema(max_items: int = MAX_FINDINGS_PER_CHUNK) -> dict[str, Any]:
    """JSON schema the model's answer must match (turned into a grammar by the backend)."""
    item = {
        "type": "object",
        "properties": {
            "quote": {"type": "string"},
            "line": {"type": "integer"},
            "message": {"type": "string"},
            "category": {"type": "string", "enum": list(CATEGORIES)},
            "severity": {"type": "string", "enum": list(SEVERITIES)},
            "cwe": {"type": "string", "pattern": "^(CWE-[1-9][0-9]{0,3})?$"},
        },
        "required": ["quote", "line", "message", "category", "severity", "cwe"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"findings": {"type": "array", "items": item, "maxItems": max_items}},
        "required": ["findings"],
        "additionalProperties": False,
    }


def system_prompt(extra_instructions: str = "", language: str = "") -> str:
    """The review's system prompt; `language` (review.language) adds the instruction to write messages
    in that language (code, quotes and CWE ids untouched)."""
    text = prompts.load("review_system") + "\n"  # its last line ended: the cached prefix as it was
    if extra_instructions.strip():
        # Repository-owner instructions come from the base revision's config, never from the change.
        text += "\nInstructions from the repository owner:\n" + extra_instructions.strip() + "\n"
    return text + language_instruction(language)


def user_prompt(chunk: Chunk, title: str = "") -> str:
    """The variable part, last, so the constant system prefix stays in the KV cache across chunks."""
    head = f"Pull request title: {title.strip()[:200]}\n" if title.strip() else ""
    return f"<untrusted>\n{head}{chunk.render()}\n</untrusted>\nReturn the findings as JSON."


@dataclass(frozen=True)
class ChunkResult:
    findings: tuple[Finding, ...]
    completion: Completion | None
    error: str | None = None  # set when the chunk could not be reviewed (reported in coverage)
    dropped: int = 0  # findings whose quote matched no line of the chunk (hallucinated)


def review_chunk(
    model: Model,
    chunk: Chunk,
    *,
    system: str,
    title: str,
    max_tokens: int,
    max_items: int = MAX_FINDINGS_PER_CHUNK,
) -> ChunkResult:
    messages = [Message("system", system), Message("user", user_prompt(chunk, title))]
    schema = findings_schema(max_items)
    answer = ask_json(model, messages, schema, max_tokens=max_tokens)
    completion, data = answer.completion, answer.data
    if answer.cut:
        return ChunkResult((), completion, "model output cut at the token limit")
    if data is None:
        return ChunkResult((), completion, f"model output is not valid findings JSON ({answer.error})")
    found, dropped = [], 0
    for raw in data["findings"]:
        f = anchor_quote(raw, chunk)
        if f is None:
            dropped += 1
        else:
            found.append(f)
    return ChunkResult(tuple(_dedupe(found)), completion, None, dropped)


def anchor_quote(raw: dict[str, Any], chunk: Chunk) -> Finding | None:
    """Place a model finding on the diff line it quotes; the model's line number only breaks ties."""
    quote = str(raw.get("quote", "")).strip()
    hint = raw.get("line") if isinstance(raw.get("line"), int) else None
    candidates = [
        (s.path, ln.new_no, ln.text.strip(), ln.kind)
        for s in chunk.sections
        for ln in s.hunk.lines
        if ln.new_no is not None
    ]
    # surrounding code shown around a hunk is real too: kept, and marked in_diff false later
    candidates += [c for s in chunk.sections for c in _shown_context(s)]
    if not quote or not candidates:
        return None
    # the quote as written first ("++i;" is code), then without a copied row number / diff marker
    for q in dict.fromkeys([_squash(quote), _squash(_MARKER.sub("", quote))]):
        exact = [c for c in candidates if c[2] and _squash(c[2]) == q]
        if exact:
            break
    if not exact:
        # a quote that covers a fragment of one line, or a slightly garbled copy of it
        exact = [c for c in candidates if len(q) >= 8 and c[2] and q in _squash(c[2])]
    if not exact:
        scored = [(difflib.SequenceMatcher(None, q, _squash(c[2])).ratio(), c) for c in candidates if c[2]]
        best = max((s for s, _ in scored), default=0.0)
        exact = [c for s, c in scored if s >= 0.85 and s == best]
    if not exact:
        return None
    # prefer added lines, then hunk context, then shown context, then the one nearest the model's line number
    exact.sort(key=lambda c: ("+ ~".index(c[3]), abs((c[1] or 0) - hint) if hint else 0))
    path, line, text, _ = exact[0]
    assert line is not None
    cwe = str(raw.get("cwe") or "").strip() or None
    category = raw.get("category", "bug")
    if cwe and category != "security":
        # the category is chosen before the cwe field; a small model fills "cwe" by reflex (CWE-89 on an
        # off-by-one), so a CWE on a non-security finding is dropped rather than turning it into one
        cwe = None
    return Finding(
        path=path,
        line=line,
        message=str(raw.get("message", "")).strip() or "Possible defect.",
        severity=str(raw.get("severity", "medium")),
        category=str(category),
        cwe=cwe,
        source="model",
        quote=text,
    )


_ROW = re.compile(r"^ *(\d+)   (.*)$")
_MARKER = re.compile(r"^\s*(\d+\s+)?[+-]?\s*")  # "  12 + code", "+ code", "+code"


def _shown_context(section: Section) -> list[tuple[str, int, str, str]]:
    """Rows of surrounding head-file code that render_section shows outside the hunk (kind "~")."""
    in_hunk = {ln.new_no for ln in section.hunk.lines if ln.new_no is not None}
    rows = (_ROW.match(r) for r in section.text.splitlines())
    return [
        (section.path, int(m.group(1)), m.group(2).strip(), "~")
        for m in rows
        if m and int(m.group(1)) not in in_hunk
    ]


def _squash(s: str) -> str:
    return " ".join(s.split())


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen: dict[tuple[str, int], Finding] = {}
    for f in findings:
        key = (f.path, f.line)
        if key not in seen or SEVERITIES.index(f.severity) > SEVERITIES.index(seen[key].severity):
            seen[key] = f
    return list(seen.values())
