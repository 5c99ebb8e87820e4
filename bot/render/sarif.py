"""SARIF 2.1.0 as GitHub code scanning accepts it (rules, levels, partialFingerprints)."""

from __future__ import annotations

import json
from typing import Any

from .. import __version__
from ..findings import cwe
from ..types import Finding, Review

_LEVEL = {"info": "note", "low": "note", "medium": "warning", "high": "error", "critical": "error"}
# GitHub maps security-severity to its own labels: >= 9.0 critical, >= 7.0 high, >= 4.0 medium, else low.
_SECURITY_SEVERITY = {"info": "1.0", "low": "3.0", "medium": "5.5", "high": "8.0", "critical": "9.5"}


def qualified_rule(f: Finding) -> str | None:
    """`source/rule`, without doubling a source the rule already names (`tests/broken`, `behaviour/…`)."""
    if not f.rule_id:
        return None
    return f.rule_id if f.rule_id.startswith(f"{f.source}/") else f"{f.source}/{f.rule_id}"


def rule_id(f: Finding) -> str:
    if f.rule_id:
        return qualified_rule(f) or f.rule_id
    return f"prereview/{f.category}" + (f"/{f.cwe.lower()}" if f.cwe else "")


def _rule(f: Finding) -> dict[str, Any]:
    tags = [f.category] + ([f"external/cwe/{f.cwe.lower()}"] if f.cwe else [])
    props: dict[str, Any] = {"tags": tags, "problem.severity": _LEVEL[f.severity]}
    if f.category == "security":
        props["security-severity"] = _SECURITY_SEVERITY[f.severity]
    name = rule_id(f).replace("/", "-")
    rule: dict[str, Any] = {
        "id": rule_id(f),
        "name": name,
        "shortDescription": {"text": f"{f.category} finding" + (f" ({f.cwe})" if f.cwe else "")},
        "properties": props,
    }
    entry = cwe.lookup(f.cwe)
    if entry is not None:
        rule["fullDescription"] = {"text": f"{entry.id}: {entry.name}"}
        rule["helpUri"] = entry.url
    return rule


def _result(f: Finding) -> dict[str, Any]:
    region: dict[str, Any] = {"startLine": f.line}
    if f.end_line and f.end_line != f.line:
        region["endLine"] = f.end_line
    text = f.message
    if f.suggestion and f.verified:
        text += f"\n\nVerified fix ({f.evidence or 'tests pass'}):\n{f.suggestion}"
    return {
        "ruleId": rule_id(f),
        "level": _LEVEL[f.severity],
        "message": {"text": text},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": f.path}, "region": region}}],
        "partialFingerprints": {
            "prereview/v1": f.fingerprint,
            "primaryLocationLineHash": f"{f.fingerprint}:1",
        },
        "properties": {"severity": f.severity, "source": f.source, "in_diff": f.in_diff},
    }


def sarif_dict(review: Review) -> dict[str, Any]:
    rules: dict[str, dict[str, Any]] = {}
    for f in review.findings:
        rules.setdefault(rule_id(f), _rule(f))
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "prereview",
                        "version": __version__,
                        "informationUri": "https://github.com/prereview/prereview",
                        "rules": list(rules.values()),
                    }
                },
                "automationDetails": {"id": "prereview/"},
                "results": [_result(f) for f in review.findings],
            }
        ],
    }


def render_sarif(review: Review) -> str:
    return json.dumps(sarif_dict(review), indent=2) + "\n"
