"""The behaviour stage: the changed Python functions at base and head on the same inputs (calls recorded
in the tests stage's runs, and generated calls for what the tests do not reach), differences judged into
findings (bugs) and `Review.behaviour` entries (intended). See bot/evidence/behaviour/.

The engine is made once per review (`evidence_for`, kept in `ctx.behaviour_engine`) before the test runs
start: the tests stage loads its tracer into them. The stage reads the tests stage's `ctx.tests` and
leaves a `BehaviourResult` (`ctx.behaviour_result`): what it compared, and the re-check the patches stage
applies to patches of its findings."""

from __future__ import annotations

from ..change.repo_secrets import MaskedPrompts
from ..models.base import Model
from ..pipeline.context import ReviewContext
from ..types import BehaviourResult, Finding
from .behaviour.engine import BehaviourEvidence


def evidence_for(ctx: ReviewContext) -> BehaviourEvidence | None:
    """The review's behaviour engine; None when the stage is off or there is nothing to compare. It looks
    at the review's selection of files (pipeline/selection.py): not at vendored, generated or excluded
    files; files over review.max_file_lines (a limit of the model's prompt) are compared all the same."""
    if not ctx.behaviour_prepared:
        ctx.behaviour_prepared = True
        ctx.behaviour_engine = (
            BehaviourEvidence.prepare(
                ctx.change, ctx.cfg, ctx.selection().evidence_diff, ctx.read_base, ctx.read_head
            )
            if ctx.cfg.behaviour.enabled
            else None
        )
    return ctx.behaviour_engine


class BehaviourStage:
    name = "behaviour"

    def prepare(self, ctx: ReviewContext) -> None:
        evidence_for(ctx)  # before the test runs start: they load its tracer

    def run(self, ctx: ReviewContext, findings: list[Finding]) -> list[Finding]:
        engine = evidence_for(ctx)
        if engine is None:
            return findings

        def model() -> Model:  # the judge's prompts quote runtime text: the repository's secrets masked
            return MaskedPrompts(ctx.model(), ctx.mask_runtime)

        out = engine.run(findings, tests=ctx.tests, model=model, progress=ctx.progress)
        ctx.behaviour += engine.changes
        ctx.notes += engine.all_notes()
        ctx.usage.seconds_model += engine.seconds_model
        ctx.behaviour_result = result_of(engine)
        return out


def result_of(engine: BehaviourEvidence) -> BehaviourResult:
    """The engine, after its run, as the record the later stages read."""
    skipped = {s.split(" (", 1)[0] for s in engine.skipped}
    compared = 0 if engine.sandbox is None else sum(1 for c in engine.targets if c.qualname not in skipped)
    ran = not (engine.targets and engine.sandbox is None)
    return BehaviourResult(compared, ran, engine.patch_check)
