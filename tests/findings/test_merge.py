"""Merging model and scanner findings, self-verification and plain-words explanations."""

from __future__ import annotations

import json

from bot.config import build
from bot.findings import merge
from bot.forges.local import LocalForge
from bot.models.scripted import ScriptedModel
from bot.pipeline import run as runner
from bot.types import ChangeRef, Finding


def F(line: int, source: str = "model", **kw: object) -> Finding:
    base = {
        "path": "a.py",
        "line": line,
        "message": f"{source} says so",
        "severity": "medium",
        "category": "security",
        "source": source,
    }
    return Finding(**{**base, **kw})  # type: ignore[arg-type]


def test_scanner_and_model_on_the_same_issue_collapse_to_the_scanner_with_max_severity() -> None:
    out = merge.merge(
        [
            F(10, cwe="CWE-89", severity="high"),
            F(11, "semgrep", cwe="CWE-89", rule_id="py-sql-built-from-strings"),
        ]
    )
    assert len(out) == 1
    [f] = out
    assert f.source == "semgrep" and f.rule_id == "py-sql-built-from-strings" and f.severity == "high"


def test_different_meaning_or_place_stays_separate() -> None:
    out = merge.merge(
        [F(10, cwe="CWE-89"), F(10, "bandit", cwe="CWE-78", rule_id="B602"), F(20, cwe="CWE-89")]
    )
    assert len(out) == 3


def test_two_scanners_on_one_line_keep_one() -> None:
    out = merge.merge(
        [F(5, "bandit", cwe="CWE-78", rule_id="B602"), F(5, "semgrep", cwe="CWE-78", rule_id="x")]
    )
    assert [f.source for f in out] == ["semgrep"]


def test_model_bug_and_model_security_on_one_line_both_stay() -> None:
    assert len(merge.merge([F(3, category="bug"), F(3, cwe="CWE-22")])) == 2


REPO_BASE = "def pick(items, i):\n    return items[i]\n"
REPO_HEAD = "def pick(items, i):\n    return items[i + 1]\n"
CLAIM = {
    "quote": "return items[i + 1]",
    "line": 2,
    "message": "Off by one: returns the next item.",
    "category": "bug",
    "severity": "high",
    "cwe": "",
}


def _review(make_repo, model: ScriptedModel, **scanners: object):
    repo = make_repo({"m.py": REPO_BASE}, {"m.py": REPO_HEAD})
    change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))
    # the behaviour stage asks the model for example inputs too: off, so the requests counted are the merge's
    data = {"model": {"backend": "scripted"}, "scanners": {"patterns": False, **scanners}}
    cfg = build({**data, "behaviour": {"enabled": False}}, env={})
    return runner.review_change(change, cfg, model=lambda: model)  # type: ignore[arg-type]


def test_self_verification_confirms(make_repo) -> None:
    model = ScriptedModel(
        {
            "replies": [
                {"findings": [CLAIM]},
                {"match": "double-check one claim", "text": json.dumps({"verdict": "confirmed"})},
            ]
        }
    )
    review = _review(make_repo, model)
    [f] = review.findings
    assert f.severity == "high" and len(model.requests) == 2
    assert "Off by one" in model.requests[1][1].content and "<untrusted>" in model.requests[1][1].content
    # both requests count in the review's tokens (the self-check's too)
    asked = sum(model.count_tokens(m.content) for req in model.requests for m in req)
    assert review.stats.prompt_tokens == asked


def test_self_verification_downgrades_a_rejected_finding(make_repo) -> None:
    model = ScriptedModel(
        {
            "replies": [
                {"findings": [CLAIM]},
                {"match": "double-check one claim", "text": json.dumps({"verdict": "rejected"})},
            ]
        }
    )
    [f] = _review(make_repo, model).findings
    assert f.severity == "low" and f.evidence == "self-check: not confirmed"


def test_self_verification_off_asks_nothing_more(make_repo) -> None:
    model = ScriptedModel({"replies": [{"findings": [CLAIM]}]})
    [f] = _review(make_repo, model, self_verify=False).findings
    assert f.severity == "high" and len(model.requests) == 1


def test_an_unreadable_verification_changes_nothing(make_repo) -> None:
    model = ScriptedModel({"replies": [{"findings": [CLAIM]}, {"text": "not json"}]})
    [f] = _review(make_repo, model).findings
    assert f.severity == "high"


def test_explain_scanner_findings_adds_plain_words(make_repo) -> None:
    repo = make_repo({"s.py": "import os\n"}, {"s.py": "import os\nTOKEN = 'AKIAIOSFODNN7EXAMPLE'\n"})
    change = LocalForge().fetch(ChangeRef("local", str(repo), "HEAD~", "HEAD"))
    cfg = build(
        {
            "model": {"backend": "scripted"},
            "scanners": {"patterns": False, "bandit": False, "explain_scanner_findings": True},
        },
        env={},
    )
    explanation = {
        "explanation": "Anyone who reads the repository can use this key; load it from the environment."
    }
    model = ScriptedModel(
        {
            "replies": [
                {"match": "Explain it", "text": json.dumps(explanation)},
            ],
            "default": {"findings": []},
        }
    )
    result = runner.review_change(change, cfg, model=lambda: model)  # type: ignore[arg-type]
    [f] = [f for f in result.findings if f.source == "secrets"]
    assert f.message.endswith(explanation["explanation"]) and f.rule_id and f.cwe == "CWE-798"
    assert all("AKIAIOSFODNN7EXAMPLE" not in m.content for req in model.requests for m in req)
