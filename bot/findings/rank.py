"""The ranking step the pipeline runs after the model and again at the end: in/out of diff, severity
floor, dedupe by fingerprint, order, cap."""

from __future__ import annotations

from ..change.diff import Diff
from ..config import Config
from ..pipeline.context import ReviewContext
from ..types import Finding, severity_rank


def finalize(findings: list[Finding], diff: Diff, cfg: Config) -> list[Finding]:
    """Mark in/out of diff, drop below min_severity, dedupe by fingerprint, rank, cap."""
    floor = severity_rank(cfg.review.min_severity)
    out: dict[str, Finding] = {}
    for f in findings:
        f = f.with_(in_diff=diff.has_line(f.path, f.line, f.side))
        if severity_rank(f.severity) < floor:
            continue
        prev = out.get(f.fingerprint)
        if prev is None or severity_rank(f.severity) > severity_rank(prev.severity):
            out[f.fingerprint] = f
    ranked = sorted(out.values(), key=lambda f: (-severity_rank(f.severity), not f.in_diff, f.path, f.line))
    return ranked[: cfg.review.max_findings]


class RankStage:
    name = "rank"

    def run(self, ctx: ReviewContext, findings: list[Finding]) -> list[Finding]:
        return finalize(findings, ctx.diff, ctx.cfg)
