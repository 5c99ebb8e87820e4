"""GitHub Actions runner channels: workflow-command annotations, the job summary, step outputs.

Used when the token cannot write to the PR (fork PRs) and for the step outputs of every run.
Escaping follows the runner's rules (actions/toolkit core/src/command.ts): data escapes `%`, CR, LF;
property values additionally escape `:` and `,`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path

from ...types import Finding, Review

_LEVEL = {"critical": "error", "high": "error", "medium": "warning", "low": "notice", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(f: Finding) -> str:
    """`::warning file=…,line=…,endLine=…,title=…::message` for one finding."""
    props = {"file": f.path, "line": str(f.line)}
    if f.end_line and f.end_line != f.line:
        props["endLine"] = str(f.end_line)
    props["title"] = f"prereview {f.severity} {f.category}" + (f" {f.cwe}" if f.cwe else "")
    joined = ",".join(f"{k}={escape_property(v)}" for k, v in props.items())
    message = f.message
    if f.suggestion is not None and f.verified:
        message += f"\n\nVerified fix ({f.evidence or 'tests pass'}):\n{f.suggestion}"
    return f"::{_LEVEL.get(f.severity, 'warning')} {joined}::{escape_data(message)}"


def annotation_lines(findings: Iterable[Finding]) -> list[str]:
    return [annotation(f) for f in findings]


def append_step_summary(markdown: str, env: Mapping[str, str]) -> bool:
    """Append to $GITHUB_STEP_SUMMARY; False when not running in Actions."""
    path = env.get("GITHUB_STEP_SUMMARY")
    if not path:
        return False
    with Path(path).open("a", encoding="utf-8") as fh:
        fh.write(markdown.rstrip("\n") + "\n")
    return True


def set_outputs(values: Mapping[str, str], env: Mapping[str, str]) -> bool:
    """Append step outputs to $GITHUB_OUTPUT (heredoc form, safe for any value)."""
    path = env.get("GITHUB_OUTPUT")
    if not path:
        return False
    with Path(path).open("a", encoding="utf-8") as fh:
        for name, value in values.items():
            delim = f"prereview_{uuid.uuid4().hex}"
            fh.write(f"{name}<<{delim}\n{value}\n{delim}\n")
    return True


def review_outputs(review: Review) -> dict[str, str]:
    return {
        "findings": str(len(review.findings)),
        "highest-severity": review.highest() or "none",
        "verified-fixes": str(sum(1 for f in review.findings if f.verified and f.suggestion is not None)),
    }
