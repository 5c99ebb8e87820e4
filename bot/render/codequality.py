"""GitLab Code Quality report (a CodeClimate-style JSON array) so MR widgets show findings, token or not.

Fields GitLab requires: description, check_name, fingerprint, severity (info|minor|major|critical|
blocker), location.path, location.lines.begin. https://docs.gitlab.com/ci/testing/code_quality/
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..types import Finding, Review
from .sarif import qualified_rule

# prereview severity -> Code Quality severity
SEVERITY = {"info": "info", "low": "minor", "medium": "major", "high": "critical", "critical": "blocker"}
MAX_DESCRIPTION = 1000


def check_name(f: Finding) -> str:
    if f.rule_id:
        return qualified_rule(f) or f.rule_id
    return f"prereview/{f.category}" + (f"/{f.cwe}" if f.cwe else "")


def _description(f: Finding) -> str:
    text = " ".join(f.message.split())
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"


def codequality_issues(review: Review) -> list[dict[str, Any]]:
    """One issue per finding; fingerprints stay unique within the report (GitLab dedupes on them)."""
    issues: list[dict[str, Any]] = []
    seen: set[str] = set()
    for f in review.findings:
        fp = f.fingerprint
        if fp in seen:  # same finding text twice in one file: keep both, told apart by line
            fp = hashlib.sha256(f"{fp}:{f.line}:{len(issues)}".encode()).hexdigest()[:16]
        seen.add(fp)
        issues.append(
            {
                "description": _description(f),
                "check_name": check_name(f),
                "fingerprint": fp,
                "severity": SEVERITY.get(f.severity, "info"),
                "location": {"path": f.path, "lines": {"begin": max(1, f.line)}},
            }
        )
    return issues


def render_codequality(review: Review) -> str:
    return json.dumps(codequality_issues(review), indent=2, ensure_ascii=False) + "\n"
