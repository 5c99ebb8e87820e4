"""Ask the model for a patch in a constrained format: the exact lines it replaces, quoted, plus new text.

A small model writes broken unified diffs; quoting lines and giving their replacement is something it
does reliably, and the quote is checked against the file (exactly, then ignoring indentation, then as a
fragment of one line) before anything is applied. Candidates come from a temperature ladder.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .. import prompts
from ..models import Message, Model
from ..models.answer import ask_json

LADDER = (0.0, 0.4, 0.7, 0.9, 1.1)
MAX_OLD_LINES = 12
FAILURE_CHARS = 900  # prompt evaluation is the cost on a CPU: keep the test output short
ASK = 'Return the fix as JSON with "faulty" and "fixed".'
ASKS_PER_CANDIDATE = 2  # requests per wanted candidate: unusable answers are common at 1.5B
TRIED_SHOWN = 4  # fixes already tested, listed in the next request
EXCERPT_LINES = 160  # whole file when shorter, else a window around the target line


def insert_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"missing": {"type": "string", "maxLength": 600}},
        "required": ["missing"],
        "additionalProperties": False,
    }


def insert_ask(problem: Problem, text: str) -> str:
    anchor = _target(text.split("\n"), problem.line)
    return (
        f'Code is missing right after the line "{anchor}". Return JSON {{"missing": ...}}: only the '
        "line(s) to insert there, with their indentation."
    )


def patch_schema() -> dict[str, Any]:
    return {
        "type": "object",
        # "faulty" sorts before "fixed": backends that sort keys keep the quote first
        "properties": {
            "faulty": {"type": "string", "maxLength": 600},
            "fixed": {"type": "string", "maxLength": 600},
        },
        "required": ["faulty", "fixed"],
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class Patch:
    """Replace lines start..end (1-based, inclusive) of `path` with `new_lines`."""

    path: str
    start: int
    end: int
    new_lines: tuple[str, ...]
    old_lines: tuple[str, ...]
    temperature: float = 0.0

    def apply(self, text: str) -> str:
        lines = text.split("\n")
        return "\n".join(lines[: self.start - 1] + list(self.new_lines) + lines[self.end :])

    @property
    def suggestion(self) -> str:
        return "\n".join(self.new_lines)


@dataclass(frozen=True)
class Problem:
    """What to fix: where, and why (a finding's message and/or failing test output)."""

    path: str
    line: int
    message: str
    failure: str = ""  # tail of the failing test output, if any
    hint: str = ""  # what the diff says about the line (e.g. that code was removed below it)
    gap: bool = False  # the change removed code right below `line`: also ask for the missing line(s)
    removed: tuple[str, ...] = ()  # what the change removed at the line (and `added`: what it put there)
    added: tuple[str, ...] = ()


def user_prompt(problem: Problem, text: str, failed: list[str] | None = None, ask: str = ASK) -> str:
    """The request: the file, the problem, the fixes the tests already rejected, then what to return."""
    lines = text.split("\n")
    lo, hi = 0, len(lines)
    if len(lines) > EXCERPT_LINES:
        lo = max(0, problem.line - EXCERPT_LINES // 2)
        hi = min(len(lines), lo + EXCERPT_LINES)
    target = _target(lines, problem.line)
    parts = [
        "<untrusted>",
        f"File {problem.path}" + (f" (lines {lo + 1}-{hi})" if (lo, hi) != (0, len(lines)) else "") + ":",
        "```",
        "\n".join(lines[lo:hi]),
        "```",
        f"The problem is at this line: {target}" if target else "",
        f"What is wrong: {problem.message.strip()[:600]}",
        problem.hint,
    ]
    if problem.removed:
        parts += ["The change under review removed these line(s) there:", "```", *problem.removed, "```"]
        if problem.added:
            parts += ["and put these in their place:", "```", *problem.added, "```"]
    if problem.failure.strip():
        parts += ["Failing test output (end):", "```", problem.failure.strip()[-FAILURE_CHARS:], "```"]
    parts.append("</untrusted>")
    if failed:
        parts += ["Already tried, and rejected by the tests (propose something else):", *failed]
    parts.append(ask)
    return "\n".join(p for p in parts if p)


def _target(lines: list[str], line: int) -> str:
    """The problem line's text; for a blank line (e.g. where code was deleted) the nearest code above."""
    return _code_above(lines, line).strip()


def _code_above(lines: list[str], line: int) -> str:
    for n in range(min(line, len(lines)), 0, -1):
        if lines[n - 1].strip():
            return lines[n - 1]
    return ""


Feedback = Callable[[Patch], str]


def candidates(
    model: Model,
    problem: Problem,
    text: str,
    k: int,
    feedback: Feedback | None = None,
    deadline: float | None = None,
) -> Iterator[Patch]:
    """Up to k distinct usable patches from at most ASKS_PER_CANDIDATE * k requests on a temperature ladder.

    Requests are independent samples: a small model shown its own failed answer in a conversation
    tends to copy it. An unusable answer (quote not in the file, no-op, repeat) costs a request, not a
    candidate. The fixes already tested are listed in later requests with why the tests rejected them
    (`feedback`, called after the caller has tested a yielded patch); the file stays a shared prefix,
    so only the tail of each request is evaluated again. No request starts after `deadline`
    (time.monotonic).
    """
    seen: set[tuple[int, int, tuple[str, ...]]] = set()
    failed: list[str] = []
    # code removed below the line: alternate asking for the missing line(s) and for a replacement
    modes = ("insert", "replace") if problem.gap else ("replace",)
    found = 0
    for i in range(ASKS_PER_CANDIDATE * k):
        if found >= k or (deadline is not None and time.monotonic() > deadline):
            return
        mode = modes[i % len(modes)]
        temp = LADDER[min(i // len(modes), len(LADDER) - 1)]
        patch = ask(model, problem, text, temp, failed[-TRIED_SHOWN:], mode=mode)
        if patch is None or (patch.start, patch.end, patch.new_lines) in seen:
            continue
        seen.add((patch.start, patch.end, patch.new_lines))
        found += 1
        yield patch
        why = feedback(patch) if feedback else ""
        shown = " / ".join(ln.strip() for ln in patch.new_lines if ln.strip())[:200]
        failed.append(f"- `{shown}`" + (f": {why[:160]}" if why else ""))


def ask(
    model: Model,
    problem: Problem,
    text: str,
    temperature: float,
    failed: list[str] | None = None,
    max_tokens: int = 256,
    mode: str = "replace",
) -> Patch | None:
    """One candidate, or None when the model's answer is unusable (bad JSON, quote not in the file, no-op)."""
    task = user_prompt(problem, text, failed, insert_ask(problem, text) if mode == "insert" else ASK)
    messages = [Message("system", prompts.load("patch_propose")), Message("user", task)]
    schema = insert_schema() if mode == "insert" else patch_schema()
    data = ask_json(model, messages, schema, max_tokens=max_tokens, temperature=temperature).data
    if data is None:
        return None
    if mode == "insert":
        return _insertion(problem, text, str(data["missing"]), temperature)
    old, new = str(data["faulty"]), str(data["fixed"])
    # shown what the change removed, a small model sometimes swaps the fields: "faulty" is then the
    # line as it was before the change (not in the file) and "fixed" the line as it is now
    return locate(problem, text, old, new, temperature) or locate(problem, text, new, old, temperature)


def _insertion(problem: Problem, text: str, missing: str, temperature: float) -> Patch | None:
    """Insert `missing` right below the problem line (where the change removed code)."""
    lines = text.split("\n")
    new = _trim(missing.split("\n"))
    if not 0 < problem.line <= len(lines) or not new or len(new) > MAX_OLD_LINES:
        return None
    at = lines[problem.line - 1]
    if [ln.strip() for ln in new] in ([at.strip()], [_target(lines, problem.line)]):
        return None  # the line above the gap, echoed
    indent = _indent(_code_above(lines, problem.line))
    if not _indent(new[0]) and indent:  # unindented: align with the code above
        new = [indent + ln for ln in new]
    return Patch(problem.path, problem.line, problem.line, (at, *new), (at,), temperature)


def locate(problem: Problem, text: str, old: str, new: str, temperature: float = 0.0) -> Patch | None:
    """Turn a quoted replacement into a Patch on exact file lines (None when the quote matches nothing)."""
    lines = text.split("\n")
    old_lines = _trim(old.split("\n"))
    new_lines = _trim(new.split("\n"))
    if not old_lines or len(old_lines) > MAX_OLD_LINES:
        return None
    start = _find(lines, old_lines, problem.line, exact=True) or _find(
        lines, old_lines, problem.line, exact=False
    )
    if start is not None:
        found = lines[start - 1 : start - 1 + len(old_lines)]
        new_lines = _reindent(new_lines, old_lines[0], found[0])
        end = start + len(old_lines) - 1
    else:  # a fragment of one line, replaced inside that line
        hit = _fragment(lines, old_lines, new_lines, problem.line)
        if hit is None:
            return None
        start, end, new_lines = hit, hit, [lines[hit - 1].replace(old.strip(), new.strip(), 1)]
        found = [lines[hit - 1]]
    if new_lines == found:
        return None
    return Patch(problem.path, start, end, tuple(new_lines), tuple(found), temperature)


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def _find(lines: list[str], old: list[str], near: int, *, exact: bool) -> int | None:
    def same(a: str, b: str) -> bool:
        return a.rstrip() == b.rstrip() if exact else a.strip() == b.strip()

    hits = [
        i + 1
        for i in range(len(lines) - len(old) + 1)
        if all(same(lines[i + j], old[j]) for j in range(len(old)))
    ]
    return min(hits, key=lambda s: abs(s - near)) if hits else None


def _fragment(lines: list[str], old: list[str], new: list[str], near: int) -> int | None:
    frag = old[0].strip()
    if len(old) != 1 or len(new) != 1 or len(frag) < 3:
        return None
    hits = [i + 1 for i, ln in enumerate(lines) if frag in ln and abs(i + 1 - near) <= 20]
    return min(hits, key=lambda s: abs(s - near)) if hits else None


def _indent(s: str) -> str:
    return s[: len(s) - len(s.lstrip())]


def _reindent(new: list[str], quoted_first: str, file_first: str) -> list[str]:
    """Shift the new lines by the indentation difference between the quote and the file."""
    have, want = _indent(quoted_first), _indent(file_first)
    if have == want:
        return new
    out = []
    for ln in new:
        if ln.startswith(have):
            out.append(want + ln[len(have) :])
        else:
            out.append(ln)
    return out
