"""Optional GitHub channels: a check run with annotations (50 per request) and SARIF upload."""

from __future__ import annotations

import base64
import gzip
import json
from datetime import datetime, timezone
from typing import Any

from ...render.markdown import counts_line
from ...render.sarif import sarif_dict
from ...types import Finding, Review
from .api import GitHubAPI

ANNOTATIONS_PER_REQUEST = 50  # the Checks API limit per create/update request
_LEVEL = {"critical": "failure", "high": "failure", "medium": "warning", "low": "notice", "info": "notice"}


def check_annotation(f: Finding) -> dict[str, Any]:
    message = f.message
    if f.suggestion is not None and f.verified:
        message += f"\n\nVerified fix ({f.evidence or 'tests pass'}):\n{f.suggestion}"
    return {
        "path": f.path,
        "start_line": f.line,
        "end_line": max(f.last_line, f.line),
        "annotation_level": _LEVEL.get(f.severity, "warning"),
        "message": message[:64000],
        "title": f"{f.severity} {f.category}" + (f" {f.cwe}" if f.cwe else ""),
    }


def create_check_run(api: GitHubAPI, review: Review, *, conclusion: str, name: str = "prereview") -> int:
    """One completed check run; annotations beyond the first 50 are appended by updates, 50 at a time."""
    notes = [check_annotation(f) for f in review.findings]
    output = {"title": f"prereview: {len(review.findings)} finding(s)", "summary": counts_line(review)}
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    run = api.request(
        "POST",
        "/check-runs",
        {
            "name": name,
            "head_sha": review.head,
            "status": "completed",
            "conclusion": conclusion,
            "completed_at": now,
            "output": {**output, "annotations": notes[:ANNOTATIONS_PER_REQUEST]},
        },
    )
    for i in range(ANNOTATIONS_PER_REQUEST, len(notes), ANNOTATIONS_PER_REQUEST):
        api.request(
            "PATCH",
            f"/check-runs/{run['id']}",
            {"output": {**output, "annotations": notes[i : i + ANNOTATIONS_PER_REQUEST]}},
        )
    return int(run["id"])


def encode_sarif(review: Review) -> str:
    """gzip, then base64: what POST /code-scanning/sarifs expects."""
    raw = json.dumps(sarif_dict(review), separators=(",", ":")).encode()
    return base64.b64encode(gzip.compress(raw)).decode("ascii")


def upload_sarif(api: GitHubAPI, review: Review, *, ref: str) -> str:
    data = api.request(
        "POST",
        "/code-scanning/sarifs",
        {
            "commit_sha": review.head,
            "ref": ref,
            "sarif": encode_sarif(review),
            "tool_name": "prereview",
        },
    )
    return str(data.get("id", ""))
