"""The Code Quality report has the shape of GitLab's documented example, for every kind of finding."""

from __future__ import annotations

import json
from typing import Any

from bot.render.codequality import SEVERITY, codequality_issues, render_codequality
from bot.types import SEVERITIES, Coverage, Finding, Review, Stats
from tests.gitlab.conftest import CODEQUALITY_EXAMPLE

LEVELS = {"info", "minor", "major", "critical", "blocker"}


def _shape(value: Any) -> Any:
    """The example's structure: keys and JSON types, values dropped."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return type(value).__name__


def assert_codequality_shape(report: Any) -> None:
    example = json.loads(CODEQUALITY_EXAMPLE.read_text())
    assert isinstance(report, list)
    want = _shape(example)[0]
    for issue in report:
        assert _shape(issue) == want, issue
        assert issue["severity"] in LEVELS
        assert issue["location"]["lines"]["begin"] >= 1
        assert issue["description"].strip() and "\n" not in issue["description"]
    fps = [i["fingerprint"] for i in report]
    assert len(fps) == len(set(fps)), "GitLab dedupes on fingerprint: they must be unique"


def _review(*findings: Finding) -> Review:
    return Review(base="a" * 40, head="b" * 40, findings=findings, stats=Stats(), coverage=Coverage())


def test_the_example_itself_passes_the_check() -> None:
    assert_codequality_shape(json.loads(CODEQUALITY_EXAMPLE.read_text()))


def test_every_severity_and_source_maps_to_the_documented_fields() -> None:
    findings = [
        Finding("src/a.py", i + 1, f"problem {sev}\nsecond line", severity=sev, category="bug")
        for i, sev in enumerate(SEVERITIES)
    ]
    findings.append(
        Finding(
            "src/b.py",
            3,
            "AWS key",
            severity="high",
            category="security",
            source="secrets",
            rule_id="aws-access-key",
            cwe="CWE-798",
        )
    )
    findings.append(Finding("src/c.py", 0, "whole file", severity="low", in_diff=False))
    issues = codequality_issues(_review(*findings))
    assert_codequality_shape(issues)
    assert [i["severity"] for i in issues[:5]] == ["info", "minor", "major", "critical", "blocker"]
    assert issues[5]["check_name"] == "secrets/aws-access-key"
    assert issues[0]["check_name"] == "prereview/bug"
    assert issues[0]["description"] == "problem info second line"
    assert issues[6]["location"]["lines"]["begin"] == 1
    assert set(SEVERITY) == set(SEVERITIES)


def test_duplicate_fingerprints_are_made_unique() -> None:
    f = Finding("a.py", 3, "same", quote="x = 1")
    issues = codequality_issues(_review(f, f.with_(line=9)))
    assert_codequality_shape(issues)
    assert issues[0]["fingerprint"] == f.fingerprint


def test_empty_review_is_an_empty_array_and_long_text_is_cut() -> None:
    assert json.loads(render_codequality(_review())) == []
    issues = codequality_issues(_review(Finding("a.py", 1, "x" * 5000)))
    assert len(issues[0]["description"]) <= 1000
