"""What a review actually checked, in words for a pull request's readers (the summary's "Checked" line).

Read from the context after the stages ran: only what happened is claimed (a scanner that could not run,
tests that gave no evidence, a behaviour comparison without a sandbox are left out; the notes say why).
"""

from __future__ import annotations

from typing import Any

from ..types import Finding
from .context import ReviewContext

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
    tests = _tests(ctx.shared.get("tests"))
    if tests:
        out.append(tests)
    compared = _compared(ctx.shared.get("behaviour"))
    if compared:
        out.append(f"behaviour of {compared} changed function(s) before and after, on the same inputs")
    verified = sum(1 for f in findings if f.verified and f.suggestion is not None)
    if verified:
        out.append(f"{verified} fix(es) verified by the tests")
    return tuple(out)


def _tests(engine: Any) -> str:
    base, head = getattr(engine, "base", None), getattr(engine, "head", None)
    if base is None or head is None or getattr(engine, "unusable", None) is not None:
        return ""
    return f"the project's tests at base ({base.summary()}) and head ({head.summary()})"


def _compared(engine: Any) -> int:
    if engine is None or getattr(engine, "sandbox", None) is None:
        return 0
    skipped = {s.split(" (", 1)[0] for s in getattr(engine, "skipped", [])}
    return sum(1 for c in getattr(engine, "targets", []) if getattr(c, "qualname", "") not in skipped)
