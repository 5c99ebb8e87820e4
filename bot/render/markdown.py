"""Markdown for PR/MR comments: one summary (hidden marker) and one body per inline finding."""

from __future__ import annotations

import re
from collections import Counter

from ..findings import cwe
from ..types import SEVERITIES, Finding, Review
from .escape import cell as _cell
from .escape import code as _code
from .escape import text as _escape
from .notes import for_readers
from .text import stage_times
from .walkthrough import walkthrough_markdown

SUMMARY_MARKER = "<!-- prereview:summary -->"
_FP = re.compile(r"<!-- prereview:fp=([0-9a-f]{16}) -->")
_ICON = {"critical": "🛑", "high": "🔴", "medium": "🟠", "low": "🟡", "info": "🔵"}


def fingerprint_marker(fp: str) -> str:
    return f"<!-- prereview:fp={fp} -->"


def fingerprints_in(text: str) -> set[str]:
    """Fingerprints hidden in a posted comment body (read only the bot's own comments)."""
    return set(_FP.findall(text or ""))


_MARKER_LINE = re.compile(r"<!-- prereview:[a-z-]+(?:=[0-9A-Za-z._-]*)? -->")


def trailing_markers(body: str) -> list[str]:
    """The hidden markers the bot wrote: the block of marker-only lines that ends the comment.

    State is read from here only; a marker anywhere else in a body (quoted, or smuggled in through a file
    name the escaping missed) is text, not state."""
    out: list[str] = []
    for line in reversed((body or "").rstrip().splitlines()):
        if not _MARKER_LINE.fullmatch(line.strip()):
            break
        out.append(line.strip())
    return out[::-1]


def is_summary(body: str) -> bool:
    """The summary comment starts with its marker (a comment merely containing it is not one)."""
    return (body or "").lstrip().startswith(SUMMARY_MARKER)


def fence_for(code: str) -> str:
    """A backtick fence longer than any run of backticks inside the code."""
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    return "`" * max(3, longest + 1)


def heading(f: Finding) -> str:
    cwe = f" · {_cwe(f.cwe)}" if f.cwe else ""
    rule = f" {_code(f.rule_id)}" if f.rule_id else ""
    src = "" if f.source == "model" else f" · {_escape(f.source)}{rule}"
    return f"{_ICON.get(f.severity, '')} **{f.severity}** · {_escape(f.category)}{cwe}{src}"


def _cwe(cwe_id: str) -> str:
    """`CWE-79 Cross-site Scripting`, linked to MITRE's page when the id is in the CWE list."""
    entry = cwe.lookup(cwe_id)
    return f"[{cwe_id} {entry.short_name}]({entry.url})" if entry else _escape(cwe_id)


def comment_body(f: Finding, *, suggestion_header: str = "suggestion", also: tuple[Finding, ...] = ()) -> str:
    """Inline comment: heading, message, a committable suggestion only when verified, hidden fingerprint.

    `suggestion_header` is "suggestion" on GitHub and e.g. "suggestion:-0+0" on GitLab. `also`: other
    findings on the same lines, in the same comment (their headings and messages; their fingerprints).
    """
    parts = [heading(f), "", _escape(f.message)]
    if f.suggestion is not None and f.verified:
        fence = fence_for(f.suggestion)
        body = f.suggestion if f.suggestion.endswith("\n") or not f.suggestion else f.suggestion + "\n"
        parts += [
            "",
            f"Verified fix — {_escape(f.evidence or 'tests pass with this change')}:",
            f"{fence}{suggestion_header}",
            body.rstrip("\n"),
            fence,
        ]
    for g in also:
        parts += ["", "---", "", heading(g), "", _escape(g.message)]
    parts += ["", *(fingerprint_marker(x.fingerprint) for x in (f, *also))]
    return "\n".join(parts)


def counts_line(review: Review) -> str:
    counts = Counter(f.severity for f in review.findings)
    if not counts:
        return "No findings."
    return " · ".join(f"{_ICON[s]} {counts[s]} {s}" for s in reversed(SEVERITIES) if counts[s])


def summary(review: Review, *, not_inline: tuple[Finding, ...] = (), title: str = "prereview") -> str:
    """The one summary comment, for the PR's readers: the findings and what was checked first, then
    what was not checked (plain words), the walkthrough and coverage; model, tokens and timings in a
    collapsed "Run details" section."""
    lines = [SUMMARY_MARKER, f"### {_escape(title)}", "", counts_line(review)]
    if review.checked:
        lines += ["", "**Checked:** " + _escape(" · ".join(review.checked)) + "."]
    if not_inline:
        lines += ["", "| | Where | Finding |", "|---|---|---|"]
        for f in not_inline:
            where = _code(f"{f.path}:{f.line}").replace("|", "\\|")
            where += "" if f.in_diff else " (outside the diff)"
            msg = _cell(f.message)
            lines.append(f"| {_ICON[f.severity]} {f.severity} | {where} | {msg} |")
    if review.behaviour:
        lines += [
            "",
            f"{_ICON['info']} **Behaviour changes** (same inputs, different results; not reported as bugs):",
            "",
        ]
        for b in review.behaviour:
            why = f" — {_escape(b.reason)}" if b.reason else ""
            where, call = _code(f"{b.path}:{b.line}"), _code(b.call[:200])
            lines.append(f"- {where} {call}: before {_code(b.before[:200])}, now {_code(b.after[:200])}{why}")
    plain = [for_readers(n) for n in review.notes]
    if plain:
        lines += ["", "**Not checked, or worth knowing:**", ""]
        lines += [f"- {_escape(n)}" for n in dict.fromkeys(plain)]
    if review.walkthrough is not None:  # review.walkthrough: true
        lines += ["", walkthrough_markdown(review.walkthrough, review.head).rstrip("\n")]
    skipped = review.coverage.skipped
    lines += [
        "",
        f"Reviewed {len(review.coverage.reviewed)} file(s)"
        + (f", skipped {len(skipped)}." if skipped else "."),
    ]
    if skipped:
        lines += ["", "<details><summary>Skipped</summary>", ""]
        lines += [f"- {_code(x.path)}: {_escape(x.reason)}" for x in skipped]
        lines += ["", "</details>"]
    lines += ["", *_run_details(review, [n for n, p in zip(review.notes, plain, strict=True) if n != p])]
    for f in review.findings:
        lines.append(fingerprint_marker(f.fingerprint))
    return "\n".join(lines) + "\n"


def _run_details(review: Review, reworded: list[str]) -> list[str]:
    """Model, tokens, timings and the notes as the stages wrote them: collapsed, for whoever runs the bot."""
    s = review.stats
    verified = sum(1 for f in review.findings if f.verified)
    rows = [
        f"- model {_code(s.model or 'none')} · {s.chunks} chunk(s) · {s.prompt_tokens} prompt + "
        f"{s.completion_tokens} completion tokens · model {s.seconds_model:.1f}s of {s.seconds_total:.1f}s"
        + (f" · {verified} verified fix(es)" if verified else ""),
        f"- head {_escape(review.head[:12])}",
    ]
    if s.stages:
        rows.append(f"- time per stage: {stage_times(s.stages)}")
    rows += [f"- note: {_escape(n)}" for n in reworded]
    return ["<details><summary>Run details</summary>", "", *rows, "", "</details>"]


def render_markdown(review: Review, *, max_per_file: int = 0) -> str:
    """What a PR would show: the summary, then every finding as its inline comment would read.
    `max_per_file` (review.max_comments_per_file; 0 = no cap): past it, a file's findings (ranked, most
    severe first) are listed in the summary, as the publishers do."""
    per_file: Counter[str] = Counter()
    inline: list[Finding] = []
    for f in review.findings:
        if f.in_diff:
            per_file[f.path] += 1
            if not max_per_file or per_file[f.path] <= max_per_file:
                inline.append(f)
    shown = {id(f) for f in inline}
    out = [summary(review, not_inline=tuple(f for f in review.findings if id(f) not in shown))]
    for f in inline:
        if f.in_diff:
            out.append(
                f"#### {_code(f.path)} line {f.line}"
                + (f"–{f.end_line}" if f.end_line and f.end_line != f.line else "")
            )
            out.append(comment_body(f))
    return "\n\n".join(out) + "\n"
