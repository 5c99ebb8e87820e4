"""The one note line of a review whose tests could not be used as evidence, or were used in part."""

from __future__ import annotations

from collections.abc import Sequence

from .. import wording
from .projectenv import FIX_TIME, fix_for
from .testrun import TestRun


def cannot_test_note(
    why: str, at: str = "base", argv: Sequence[str] | None = None, env_took: tuple[float, float] | None = None
) -> str:
    """The one note line of a review whose tests could not be used. `env_took`: (seconds the environment's
    build took, `tests.budget_seconds`) when that build left the runs less than `sandbox.timeout`: a run
    that timed out then did so because the build used the budget, which the next review does not pay."""
    if why.startswith("timed out") and env_took is not None:
        took, budget = env_took
        return (
            f"Tests not used as evidence: the {at} run could not test anything ({why}): building the test "
            f"environment took {took:.0f}s of `tests.budget_seconds` ({budget:.0f}s); the environment is "
            "kept, so the next review runs the tests (or raise `tests.budget_seconds`)."
        )
    fix = FIX_TIME if why.startswith("timed out") else fix_for(argv)
    return f"Tests not used as evidence: the {at} run could not test anything ({why}); {fix}."


def uncollected_note(run: TestRun, at: str = "base") -> str | None:
    """The note for a run whose tests ran though some test modules did not import (pytest's
    `--continue-on-collection-errors`, detect.PYTEST): which modules, and the first reason. None when
    every module was collected or nothing ran (then the run is unusable, and `cannot_test_note` says so)."""
    if not run.uncollected or run.passed == 0:
        return None
    modules = [u.partition(": ")[0] for u in run.uncollected]
    why = next((u.partition(": ")[2] for u in run.uncollected if ": " in u), "")
    shown = wording.first_few([f"`{p}`" for p in modules])
    return (
        f"tests: {len(modules)} test module(s) could not be collected at {at} ({shown}"
        + (f": {why}" if why else "")
        + f"); the other tests ran ({run.summary()}) and are compared, those modules only as errors "
        "(install what they import in `tests.python`'s interpreter, or list it in the test requirements)."
    )
