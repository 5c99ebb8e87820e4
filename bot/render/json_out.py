"""The versioned JSON output (schema: bot/schemas/review.schema.json)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from ..types import Finding, Review

VERSION = 1


def finding_dict(f: Finding) -> dict[str, Any]:
    d: dict[str, Any] = {
        "path": f.path,
        "line": f.line,
        "end_line": f.last_line,
        "side": f.side,
        "severity": f.severity,
        "category": f.category,
        "message": f.message,
        "cwe": f.cwe,
        "source": f.source,
        "rule_id": f.rule_id,
        "fingerprint": f.fingerprint,
        "in_diff": f.in_diff,
        "suggestion": f.suggestion,
        "verified": f.verified,
        "evidence": f.evidence,
    }
    return d


def review_dict(review: Review) -> dict[str, Any]:
    out: dict[str, Any]
    out = {
        "version": VERSION,
        "base": review.base,
        "head": review.head,
        "findings": [finding_dict(f) for f in review.findings],
        "stats": asdict(review.stats),
        "coverage": {
            "reviewed": list(review.coverage.reviewed),
            "skipped": [{"path": s.path, "reason": s.reason} for s in review.coverage.skipped],
        },
        "notes": list(review.notes),
    }
    if review.behaviour:  # present only when the behaviour stage found intended changes
        out["behaviour"] = [asdict(b) for b in review.behaviour]
    return out


def render_json(review: Review) -> str:
    return json.dumps(review_dict(review), indent=2) + "\n"
