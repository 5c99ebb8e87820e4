"""The patches stage: for the findings a patch can fix (broken tests first, then the model's bug and
security findings), propose candidates and keep the first one the tests verify (patches/verify.py)."""

from __future__ import annotations

from ..models.meter import Meter
from ..pipeline.context import ReviewContext
from ..types import Finding
from .verify import PatchStage


class PatchesStage:
    name = "patches"

    def run(self, ctx: ReviewContext, findings: list[Finding]) -> list[Finding]:
        engine = ctx.shared.get("tests")
        if not isinstance(engine, PatchStage):  # no tests stage ran before this one
            return findings
        seen = len(engine.notes)  # the tests stage reported the ones before
        meter = Meter(ctx.model)  # proposals and agent steps count in the review's tokens and model time
        try:
            out = engine.post_findings(ctx.change, ctx.diff, findings, meter, ctx.cfg, ctx.progress)
        finally:
            meter.add_to(ctx.usage)
        ctx.notes += engine.notes[seen:]
        return out
