"""The tests stage: the project's tests at base and head in the sandbox; what the change breaks becomes a
finding. The runs start in the background when the review begins (they overlap with the model review) and
are left in `ctx.shared["tests"]` for the stages after it (behaviour evidence, patches)."""

from __future__ import annotations

from ..patches.verify import PatchStage
from ..pipeline.context import Background, ReviewContext
from ..types import Finding, Skipped
from . import testrun
from .behaviour_stage import evidence_for


class TestsStage:
    __test__ = False  # not a pytest test class
    name = "tests"

    def __init__(self, engine: PatchStage | None = None) -> None:
        self._engine = engine
        self._pending: Background | None = None

    def engine(self, ctx: ReviewContext) -> PatchStage:
        if "tests" not in ctx.shared:
            cache = ctx.cache_dir or testrun.default_cache_dir()
            engine = self._engine or PatchStage(
                ctx.change, ctx.cfg, cache_dir=cache, read_for_prompt=ctx.read_head
            )
            engine.diff = ctx.diff
            engine.behaviour = evidence_for(ctx)  # its tracer rides along in the same runs
            ctx.shared["tests"] = engine
        engine = ctx.shared["tests"]
        assert isinstance(engine, PatchStage)
        return engine

    def prepare(self, ctx: ReviewContext) -> None:
        engine = self.engine(ctx)
        self._pending = Background(lambda: engine.start(ctx.progress), "tests")

    def run(self, ctx: ReviewContext, findings: list[Finding]) -> list[Finding]:
        engine = self.engine(ctx)
        if self._pending is not None:
            self._pending.result()
            ctx.charge(self.name, self._pending)
        else:
            engine.start(ctx.progress)
        ctx.notes += engine.notes
        if engine.unusable is not None:  # coverage shows the tests gave no evidence, and why
            ctx.skipped.append(Skipped("(tests)", f"not used as evidence: {engine.unusable}"))
        return [*engine.breakage_findings(ctx.diff), *findings]
