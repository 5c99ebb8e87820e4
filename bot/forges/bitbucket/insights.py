"""A Review as one Code Insights report with annotations (Bitbucket's checks-like channel).

Limits from Atlassian's REST spec (`RestSetInsightReportRequest`, `RestSingleAddInsightAnnotationRequest`):
title and reporter up to 450 characters, at most 6 `data` items, an annotation's message up to 2,000
characters, `severity` LOW|MEDIUM|HIGH, `type` VULNERABILITY|CODE_SMELL|BUG, `line` >= 0 (0: the file).
Bitbucket keeps at most 1,000 annotations per report; the rest are left out and counted in `details`.
"""

from __future__ import annotations

from typing import Any

from ...render.markdown import counts_line
from ...types import Finding, Review

MAX_ANNOTATIONS = 1000
_SEVERITY = {"critical": "HIGH", "high": "HIGH", "medium": "MEDIUM", "low": "LOW", "info": "LOW"}


def annotation(f: Finding) -> dict[str, Any]:
    message = f.message
    if f.suggestion is not None and f.verified:
        message += f"\n\nVerified fix ({f.evidence or 'tests pass'}):\n{f.suggestion}"
    kind = (
        "VULNERABILITY"
        if f.category == "security" or f.cwe
        else "BUG"
        if f.category == "bug"
        else "CODE_SMELL"
    )
    return {
        "externalId": f.fingerprint,
        "path": f.path,
        "line": f.line if f.side != "LEFT" else 0,  # a removed line is not in the commit: the file
        "message": message[:2000],
        "severity": _SEVERITY.get(f.severity, "MEDIUM"),
        "type": kind,
    }


def report(review: Review, *, failed: bool, link: str = "") -> dict[str, Any]:
    """The report: PASS/FAIL by the configured fail level, counts as data."""
    counted = {s: sum(1 for f in review.findings if f.severity == s) for s in ("critical", "high", "medium")}
    left_out = max(0, len(review.findings) - MAX_ANNOTATIONS)
    details = counts_line(review) + (
        f" ({left_out} not annotated: Bitbucket keeps {MAX_ANNOTATIONS})" if left_out else ""
    )
    out: dict[str, Any] = {
        "title": "prereview",
        "reporter": "prereview",
        "result": "FAIL" if failed else "PASS",
        "details": details[:2000],
        "data": [
            {"title": "Findings", "type": "NUMBER", "value": len(review.findings)},
            *({"title": s.capitalize(), "type": "NUMBER", "value": n} for s, n in counted.items()),
            {"title": "Files reviewed", "type": "NUMBER", "value": len(review.coverage.reviewed)},
        ],
    }
    if link:
        out["link"] = link
    return out


def annotations_for(review: Review) -> list[dict[str, Any]]:
    return [annotation(f) for f in review.findings[:MAX_ANNOTATIONS]]
