"""What a review actually checked, in words for a pull request's readers (the summary's "Checked" line).

Read from the context after the stages ran: only what happened is claimed (a scanner that could not run,
tests that gave no evidence, a behaviour comparison without a sandbox are left out; the notes say why).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..types import Finding
from .context import ReviewContext

if TYPE_CHECKING:
    from ..evidence.runs import TestRuns

_SCANNERS = {"secrets": "secrets", "bandit": "bandit", "patterns": "semgrep rules"}


def checked(ctx: ReviewContext, findings: list[Finding]) -> tuple[str, ...]:
    out: list[str] = []
    if ctx.reviewed and ctx.usage.model:
        out.append(f"model review of {len(ctx.reviewed)} file(s)")
    if "scanners" in ctx.seconds:
        ran = [
            label
            for name, label in _SCANNERS.items()
            if getattr(ctx.cfg.scanners, name, False) and not any(f"scanner '{name}'" in n for n in ctx.notes)
        ]
        if ran:
            out.append(f"security scanners ({', '.join(ran)})")
    tests = _tests(ctx.tests)
    if tests:
        out.append(tests)
    compared = ctx.behaviour_result.compared if ctx.behaviour_result is not None else 0
    if compared:
        out.append(f"behaviour of {compared} changed function(s) before and after, on the same inputs")
    verified = sum(1 for f in findings if f.verified and f.suggestion is not None)
    if verified:
        out.append(f"{verified} fix(es) verified by the tests")
    return tuple(out)


def _tests(runs: TestRuns | None) -> str:
    if runs is None or runs.base is None or runs.head is None or runs.unusable is not None:
        return ""
    return f"the project's tests at base ({runs.base.summary()}) and head ({runs.head.summary()})"
