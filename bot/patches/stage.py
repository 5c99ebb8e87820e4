"""The patches stage: for the findings a patch can fix (broken tests first, then the model's bug and
security findings), propose candidates and keep the first one the tests verify (patches/verify.py).

It reads the tests stage's `ctx.tests` (TestRuns) and the behaviour stage's re-check (`ctx.behaviour_result`)
and nothing else of theirs: data flows one way, evidence -> patches."""

from __future__ import annotations

from ..models.meter import Meter
from ..pipeline.context import ReviewContext
from ..types import Finding
from .verify import Patcher, Verdict


class PatchesStage:
    name = "patches"

    def __init__(self) -> None:
        self.verdicts: list[Verdict] = []  # every candidate tried, for logs and benches

    def run(self, ctx: ReviewContext, findings: list[Finding]) -> list[Finding]:
        if ctx.tests is None:  # no tests stage ran before this one
            return findings
        recheck = ctx.behaviour_result.recheck if ctx.behaviour_result is not None else None
        patcher = Patcher(ctx.change, ctx.cfg, ctx.tests, recheck, read_for_prompt=ctx.read_head)
        meter = Meter(ctx.model)  # proposals and agent steps count in the review's tokens and model time
        try:
            out = patcher.post_findings(findings, meter, ctx.progress)
        finally:
            meter.add_to(ctx.usage)
        ctx.notes += patcher.notes
        self.verdicts += patcher.verdicts
        return out
