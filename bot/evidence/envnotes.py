"""The one note line of a review whose tests could not be used as evidence."""

from __future__ import annotations

from collections.abc import Sequence

from .projectenv import FIX_TIME, fix_for


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
