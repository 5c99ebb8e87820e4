"""The tests stage: the project's tests at base and head in the sandbox; what the change breaks becomes a
finding. The runs start in the background when the review begins (they overlap with the model review) and
are left in `ctx.tests` (a `TestRuns`, evidence/runs.py) for the stages after it (behaviour evidence,
patches)."""

from __future__ import annotations

from ..pipeline.context import Background, ReviewContext
from ..types import Finding, Skipped
from . import testrun
from .behaviour_stage import evidence_for
from .runs import TestRuns, run_tests


class TestsStage:
    __test__ = False  # not a pytest test class
    name = "tests"

    def __init__(self) -> None:
        self._pending: Background | None = None

    def _start(self, ctx: ReviewContext) -> TestRuns:
        behaviour = evidence_for(ctx)  # its tracer rides along in the same runs
        return run_tests(
            ctx.change,
            ctx.cfg,
            cache_dir=ctx.cache_dir or testrun.default_cache_dir(),
            hook_for=behaviour.trace_hook if behaviour is not None else None,
            progress=ctx.progress,
        )

    def prepare(self, ctx: ReviewContext) -> None:
        evidence_for(ctx)  # on this thread: the context's selection and the engine are made once
        self._pending = Background(lambda: self._start(ctx), "tests")

    def run(self, ctx: ReviewContext, findings: list[Finding]) -> list[Finding]:
        if self._pending is not None:
            runs = self._pending.result()
            ctx.charge(self.name, self._pending)
        else:
            runs = self._start(ctx)
        assert isinstance(runs, TestRuns)
        ctx.tests = runs
        ctx.notes += runs.notes
        if runs.unusable is not None:  # coverage shows the tests gave no evidence, and why
            ctx.skipped.append(Skipped("(tests)", f"not used as evidence: {runs.unusable}"))
        return [*runs.breakage_findings(ctx.change), *findings]
