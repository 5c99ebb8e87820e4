"""reviewdog Diagnostic Format (rdjson): `prereview review --format rdjson | reviewdog -f=rdjson`."""

from __future__ import annotations

import json
from typing import Any

from ..types import Finding, Review

_SEVERITY = {"info": "INFO", "low": "INFO", "medium": "WARNING", "high": "ERROR", "critical": "ERROR"}


def _diagnostic(f: Finding) -> dict[str, Any]:
    rng = {"start": {"line": f.line}, "end": {"line": f.last_line}}
    d: dict[str, Any] = {
        "message": f.message,
        "location": {"path": f.path, "range": rng},
        "severity": _SEVERITY[f.severity],
        "source": {"name": f"prereview/{f.source}"},
        "code": {"value": f.rule_id or f.cwe or f.category},
        "original_output": f.fingerprint,
    }
    if f.suggestion is not None and f.verified:
        # reviewdog replaces [start, end) : end is the first column after the last replaced line.
        d["suggestions"] = [
            {
                "range": {
                    "start": {"line": f.line, "column": 1},
                    "end": {"line": f.last_line + 1, "column": 1},
                },
                "text": f.suggestion
                if f.suggestion.endswith("\n") or not f.suggestion
                else f.suggestion + "\n",
            }
        ]
    return d


def render_rdjson(review: Review) -> str:
    doc = {
        "source": {"name": "prereview", "url": "https://github.com/prereview/prereview"},
        "severity": "WARNING",
        "diagnostics": [_diagnostic(f) for f in review.findings],
    }
    return json.dumps(doc, indent=2) + "\n"
