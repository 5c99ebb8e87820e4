"""The walkthrough as Markdown, between markers, so it can live in the summary comment or in the PR/MR
description next to the author's own text (which is never touched)."""

from __future__ import annotations

import re

from ..types import Walkthrough
from . import escape

START = "<!-- prereview:walkthrough -->"
END = "<!-- /prereview:walkthrough -->"
_STATE = re.compile(r"<!-- prereview:[a-z-]+(?:=[0-9A-Za-z._-]*)? -->")  # as render.markdown reads state
_BLOCK = re.compile(re.escape(START) + r".*?" + re.escape(END) + r"\n?", re.S)


def _safe(s: str) -> str:
    """Model text is untrusted: one line, no raw HTML (hidden markers), no mentions, no images."""
    return escape.text(" ".join(s.split()))


def _cell(s: str) -> str:
    return escape.cell(" ".join(s.split()))


def _code(path: str) -> str:
    return escape.code(path)


def walkthrough_markdown(w: Walkthrough, head: str = "") -> str:
    """The block, markers included. The headings are fixed English UI strings (review.language changes
    the model's sentences only)."""
    lines = [START, "#### Walkthrough", ""]
    if w.summary:
        lines += [_safe(w.summary), ""]
    if w.note:
        lines += [f"> {_safe(w.note)}", ""]
    if w.files:
        lines += ["| File | Change |", "|---|---|"]
        lines += [f"| {_code(n.path)} | {_cell(n.text)} |" for n in w.files]
        lines.append("")
    if w.risks:
        lines += ["**Look closely at**", ""]
        lines += [f"- {_code(f'{r.path}:{r.line}')} — {_safe(r.why)}" for r in w.risks]
        lines.append("")
    if w.behaviour:
        lines += ["**Behaviour changes** (base and head run on the same inputs)", ""]
        lines += [f"- {_safe(b)}" for b in w.behaviour]
        lines.append("")
    at = f" at `{head[:12]}`" if head else ""
    lines += [f"<sub>walkthrough{at} · model `{w.model or 'none'}` · from the diff only</sub>", END]
    return "\n".join(lines) + "\n"


def block_in(text: str) -> str | None:
    m = _BLOCK.search(text or "")
    return m.group(0) if m else None


def with_block(text: str, block: str) -> str:
    """`text` with its walkthrough block replaced by `block` (or `block` added at the end, above the bot's
    trailing state markers, which must stay last): everything outside the markers stays as it was."""
    text = text or ""
    if _BLOCK.search(text):
        return _BLOCK.sub(lambda _: block if block.endswith("\n") else block + "\n", text, count=1)
    if not text.strip():
        return block
    lines = text.rstrip("\n").split("\n")
    cut = len(lines)
    while cut > 0 and _STATE.fullmatch(lines[cut - 1].strip()):
        cut -= 1
    if cut == len(lines):  # no state markers (a PR description): append
        return text + ("\n" if text.endswith("\n") else "\n\n") + block
    head, tail = "\n".join(lines[:cut]), "\n".join(lines[cut:])
    return head.rstrip("\n") + "\n\n" + block + tail + "\n"
