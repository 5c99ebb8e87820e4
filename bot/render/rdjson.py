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
    text = _line_based(f.suggestion) if f.suggestion is not None and f.verified else None
    if text is not None:
        # reviewdog's line-based suggestion: lines start..end inclusive, no columns; it writes the text
        # plus one newline into a `suggestion` block (GitHub) or `suggestion:-0+<end-start>` (GitLab).
        d["suggestions"] = [
            {"range": {"start": {"line": f.line}, "end": {"line": f.last_line}}, "text": text}
        ]
    return d


def _line_based(suggestion: str) -> str | None:
    """The replacement lines as reviewdog wants them: no trailing newline (it adds one), "" to delete.
    None for one empty line: reviewdog's line-based form cannot tell it from a deletion."""
    if suggestion in ("", "\n"):
        return "" if suggestion == "" else None
    return suggestion[:-1] if suggestion.endswith("\n") else suggestion


def render_rdjson(review: Review) -> str:
    doc = {
        "source": {"name": "prereview", "url": "https://github.com/prereview/prereview"},
        "severity": "WARNING",
        "diagnostics": [_diagnostic(f) for f in review.findings],
    }
    return json.dumps(doc, indent=2) + "\n"
