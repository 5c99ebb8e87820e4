"""Plain terminal text: one block per finding, then coverage and figures."""

from __future__ import annotations

from ..types import Review


def stage_times(stages: dict[str, float]) -> str:
    """`model 12.3s · tests 4.0s · …`, in pipeline order (the stages overlap: they can sum to more)."""
    return " · ".join(f"{name} {sec:.1f}s" for name, sec in stages.items())


def render_text(review: Review) -> str:
    out: list[str] = []
    for f in review.findings:
        loc = f"{f.path}:{f.line}" + (f"-{f.end_line}" if f.end_line and f.end_line != f.line else "")
        tag = f"{f.severity.upper()} {f.category}" + (f" {f.cwe}" if f.cwe else "")
        src = "" if f.source == "model" else f" [{f.source}{':' + f.rule_id if f.rule_id else ''}]"
        out.append(f"{loc}: {tag}{src}" + ("" if f.in_diff else " (outside the diff)"))
        out += [f"    {line}" for line in f.message.splitlines()]
        if f.suggestion is not None and f.verified:
            out.append(f"    verified fix ({f.evidence or 'tests pass'}):")
            out += [f"    | {line}" for line in f.suggestion.splitlines()]
        out.append("")
    if not review.findings:
        out += ["No findings.", ""]
    for b in review.behaviour:
        # Listed, not reported: the judge found no bug, or could not judge (the reason says which).
        out.append(f"behaviour change {b.path}:{b.line}: {b.call}: before {b.before}; now {b.after}")
        if b.reason:
            out.append(f"    not reported as a bug: {b.reason}")
    for note in review.notes:
        out.append(f"warning: {note}")
    s = review.stats
    out.append(
        f"{len(review.findings)} finding(s) in {len(review.coverage.reviewed)} file(s); "
        f"model {s.model or 'none'}, {s.chunks} chunk(s), {s.prompt_tokens}+{s.completion_tokens} tokens, "
        f"{s.seconds_total:.1f}s"
    )
    if s.stages:
        out.append("time per stage: " + stage_times(s.stages))
    for sk in review.coverage.skipped:
        out.append(f"skipped {sk.path}: {sk.reason}")
    return "\n".join(out) + "\n"
