"""The five output formats from one Review: schema, SARIF for GitHub, reviewdog rdjson, markdown, text."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from bot.render import FORMATS, render
from bot.render.markdown import SUMMARY_MARKER, comment_body, fence_for, fingerprint_marker, fingerprints_in
from bot.types import Coverage, Finding, Review, Skipped, Stats

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "bot" / "schemas" / "review.schema.json").read_text())
SARIF_MINIMAL = Path("/work/shared/platform/sarif/minimal-required.github-docs.sarif.json")
for _cand in (ROOT.parent / "shared" / "platform" / "sarif" / "minimal-required.github-docs.sarif.json",):
    if _cand.is_file():
        SARIF_MINIMAL = _cand

FINDINGS = (
    Finding(
        "app/db.py",
        12,
        "SQL built by string formatting: <script>alert(1)</script> @admin | pipe",
        severity="critical",
        category="security",
        cwe="CWE-89",
        quote='q = f"SELECT {x}"',
    ),
    Finding(
        "app/db.py",
        20,
        "Off-by-one in the loop bound.",
        severity="high",
        end_line=22,
        suggestion="for i in range(n):\n    total += a[i]\n",
        verified=True,
        evidence="tests: 3 passed, was 1 failed",
        quote="for i in range(n + 1):",
    ),
    Finding(
        "app/util.py",
        3,
        "Hard-coded secret.",
        severity="medium",
        category="security",
        source="secrets",
        rule_id="aws-key",
        cwe="CWE-798",
    ),
    Finding(
        "app/util.py",
        40,
        "Unused variable outside the change.",
        severity="low",
        category="maintainability",
        in_diff=False,
    ),
    Finding(
        "docs/x.md",
        1,
        "Typo with ``` backticks ```` inside.",
        severity="info",
        category="maintainability",
        suggestion="fixed ```` text",
        verified=False,
    ),
)
REVIEW = Review(
    base="a" * 40,
    head="b" * 40,
    findings=FINDINGS,
    stats=Stats(
        files=4,
        hunks=6,
        chunks=2,
        prompt_tokens=1234,
        completion_tokens=56,
        seconds_model=1.5,
        seconds_total=2.0,
        model="qwen2.5-coder-0.5b",
    ),
    coverage=Coverage(
        reviewed=("app/db.py", "app/util.py", "docs/x.md"),
        skipped=(Skipped("yarn.lock", "lock file"), Skipped("big.py", "not reviewed: model output cut")),
    ),
    title="Add <b>queries</b>",
    notes=("sandbox is off: suggestions are not verified",),
)
EMPTY = Review(base="c" * 40, head="d" * 40, findings=(), stats=Stats(), coverage=Coverage())


def test_formats_are_the_five() -> None:
    assert set(FORMATS) == {"text", "markdown", "json", "rdjson", "sarif"}
    with pytest.raises(ValueError, match="unknown format"):
        render(REVIEW, "xml")


@pytest.mark.parametrize("review", [REVIEW, EMPTY])
def test_json_validates_against_the_schema(review: Review) -> None:
    doc = json.loads(render(review, "json"))
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.validate(doc, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert doc["version"] == 1 and len(doc["findings"]) == len(review.findings)


def test_json_fields() -> None:
    doc = json.loads(render(REVIEW, "json"))
    first, second = doc["findings"][0], doc["findings"][1]
    assert (first["path"], first["line"], first["end_line"], first["side"]) == ("app/db.py", 12, 12, "RIGHT")
    assert (first["cwe"], first["source"], first["in_diff"], first["verified"]) == (
        "CWE-89",
        "model",
        True,
        False,
    )
    assert second["end_line"] == 22 and second["suggestion"].startswith("for i") and second["verified"]
    assert doc["findings"][3]["in_diff"] is False
    assert len({f["fingerprint"] for f in doc["findings"]}) == len(FINDINGS)
    assert doc["coverage"]["skipped"][0] == {"path": "yarn.lock", "reason": "lock file"}
    assert "quote" not in first  # the anchoring quote is internal
    assert doc["stats"]["model"] == "qwen2.5-coder-0.5b"


def test_json_schema_rejects_bad_output() -> None:
    doc = json.loads(render(REVIEW, "json"))
    for mutate in (
        lambda d: d["findings"][0].update(severity="urgent"),
        lambda d: d["findings"][0].update(side="MIDDLE"),
        lambda d: d["findings"][0].update(cwe="89"),
        lambda d: d["findings"][0].update(line=0),
        lambda d: d["findings"][0].pop("fingerprint"),
        lambda d: d.update(version=2),
        lambda d: d["stats"].pop("model"),
    ):
        bad = json.loads(json.dumps(doc))
        mutate(bad)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SCHEMA)


def _key_paths(node: object, prefix: str = "") -> set[str]:
    """Dotted key paths of a JSON document (lists collapse to [])."""
    out: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            out.add(prefix + k)
            out |= _key_paths(v, prefix + k + ".")
    elif isinstance(node, list):
        for v in node:
            out |= _key_paths(v, prefix + "[].")
    return out


def test_sarif_has_what_github_requires() -> None:
    doc = json.loads(render(REVIEW, "sarif"))
    assert doc["version"] == "2.1.0" and "sarif-2.1.0" in doc["$schema"]
    if SARIF_MINIMAL.is_file():
        required = _key_paths(json.loads(SARIF_MINIMAL.read_text()))
        # the example's optional extras we don't produce
        optional = {
            "runs.[].results.[].locations.[].physicalLocation.region.startColumn",
            "runs.[].results.[].locations.[].physicalLocation.region.endColumn",
            "runs.[].tool.driver.rules.[].properties.id",
            "runs.[].tool.driver.rules.[].properties.kind",
            "runs.[].tool.driver.rules.[].properties.name",
            "runs.[].tool.driver.rules.[].properties.security-severity",
        }
        assert required - optional - _key_paths(doc) == set()
    (run,) = doc["runs"]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert len(rules) == len(run["tool"]["driver"]["rules"])  # unique rule ids
    assert len(run["results"]) == len(FINDINGS)
    for res, f in zip(run["results"], FINDINGS):
        assert res["ruleId"] in rules
        assert res["level"] in ("note", "warning", "error")
        assert res["partialFingerprints"]["primaryLocationLineHash"] == f"{f.fingerprint}:1"
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"] == f.path and loc["region"]["startLine"] == f.line
    assert run["results"][1]["locations"][0]["physicalLocation"]["region"]["endLine"] == 22
    sec = rules["prereview/security/cwe-89"]["properties"]
    assert float(sec["security-severity"]) >= 9.0 and "external/cwe/cwe-89" in sec["tags"]
    assert "secrets/aws-key" in rules
    assert json.loads(render(EMPTY, "sarif"))["runs"][0]["results"] == []


def test_rdjson_matches_reviewdog_diagnostic_format() -> None:
    doc = json.loads(render(REVIEW, "rdjson"))
    assert isinstance(doc["source"]["name"], str)
    assert doc.get("severity", "WARNING") in ("UNKNOWN_SEVERITY", "ERROR", "WARNING", "INFO")
    assert len(doc["diagnostics"]) == len(FINDINGS)
    for d, f in zip(doc["diagnostics"], FINDINGS):
        assert isinstance(d["message"], str) and d["message"]
        assert d["location"]["path"] == f.path
        assert d["location"]["range"]["start"]["line"] == f.line
        assert d["location"]["range"].get("end", {"line": f.line})["line"] >= f.line
        assert d["severity"] in ("ERROR", "WARNING", "INFO")
        assert isinstance(d["source"]["name"], str) and isinstance(d["code"]["value"], str)
        assert isinstance(d.get("original_output", ""), str)
    assert [d["severity"] for d in doc["diagnostics"]] == ["ERROR", "ERROR", "WARNING", "INFO", "INFO"]
    # only a verified fix becomes a suggestion: reviewdog's line-based form, lines 20..22 inclusive
    # (tests/test_rdjson_reviewdog.py applies it the way reviewdog posts it)
    sugg = [d.get("suggestions") for d in doc["diagnostics"]]
    assert sugg[0] is None and sugg[4] is None
    (s,) = sugg[1]
    assert s["range"] == {"start": {"line": 20}, "end": {"line": 22}}
    assert s["text"] == "for i in range(n):\n    total += a[i]"


def test_markdown_summary_and_inline_bodies() -> None:
    md = render(REVIEW, "markdown")
    assert md.startswith(SUMMARY_MARKER)
    assert "<script>" not in md and "&lt;script&gt;" in md  # model text cannot inject HTML
    assert "@admin" not in md  # no pings
    assert "`app/util.py:40` (outside the diff)" in md  # outside-diff findings go to the summary table
    assert "yarn.lock" in md and "lock file" in md and "skipped 2" in md
    assert "sandbox is off" in md
    assert fingerprints_in(md) == {f.fingerprint for f in FINDINGS}
    assert "```suggestion\nfor i in range(n):\n    total += a[i]\n```" in md  # verified -> suggestion block
    assert "fixed ```` text" not in md  # unverified suggestions are never offered
    body = comment_body(FINDINGS[1], suggestion_header="suggestion:-0+2")
    assert "```suggestion:-0+2" in body and body.endswith(fingerprint_marker(FINDINGS[1].fingerprint))
    assert fence_for("a ```` b") == "`````" and fence_for("plain") == "```"
    empty = render(EMPTY, "markdown")
    assert empty.startswith(SUMMARY_MARKER) and "No findings." in empty


def test_text_is_readable() -> None:
    text = render(REVIEW, "text")
    lines = text.splitlines()
    assert "app/db.py:12: CRITICAL security CWE-89" in lines
    assert "app/db.py:20-22: HIGH bug" in lines
    assert "app/util.py:3: MEDIUM security CWE-798 [secrets:aws-key]" in lines
    assert "app/util.py:40: LOW maintainability (outside the diff)" in lines
    assert "    | for i in range(n):" in lines
    assert "skipped yarn.lock: lock file" in lines
    assert any(ln.startswith("5 finding(s) in 3 file(s); model qwen2.5-coder-0.5b") for ln in lines)
    assert "\x1b" not in text  # no terminal escapes when written to a file
    assert render(EMPTY, "text").startswith("No findings.")


def test_a_cwe_is_named_and_linked_in_comments_and_sarif():
    from bot.render import markdown, sarif

    f = Finding("a.py", 1, "m", "high", "security", cwe="CWE-79")
    assert (
        "[CWE-79 Cross-site Scripting](https://cwe.mitre.org/data/definitions/79.html)" in markdown.heading(f)
    )
    unknown = Finding("a.py", 1, "m", "high", "security", cwe="CWE-4242")
    assert "CWE-4242" in markdown.heading(unknown) and "](" not in markdown.heading(unknown)
    rule = sarif._rule(f)
    assert rule["helpUri"] == "https://cwe.mitre.org/data/definitions/79.html"
    assert rule["fullDescription"]["text"].startswith("CWE-79: Improper Neutralization")
    assert "helpUri" not in sarif._rule(unknown)


def test_rule_ids_name_their_source_once() -> None:
    from bot.render.codequality import codequality_issues

    broken = Finding(
        "app/db.py", 5, "This change breaks 1 test.", severity="high", source="tests", rule_id="tests/broken"
    )
    review = Review(
        base="a" * 40, head="b" * 40, findings=(broken, FINDINGS[2]), stats=Stats(), coverage=Coverage()
    )
    run = json.loads(render(review, "sarif"))["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == ["tests/broken", "secrets/aws-key"]
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} == {"tests/broken", "secrets/aws-key"}
    assert [i["check_name"] for i in codequality_issues(review)] == ["tests/broken", "secrets/aws-key"]


def test_an_unjudged_behaviour_change_is_not_called_intended() -> None:
    from dataclasses import replace

    from bot.types import BehaviourChange

    change = BehaviourChange("m.py", 3, "m.f", "f(2)", "4", "5", reason="not judged (no model)")
    review = replace(EMPTY, behaviour=(change,))
    for fmt in ("text", "markdown"):
        out = render(review, fmt)
        assert "f(2)" in out and "not judged (no model)" in out
        assert "intended" not in out.lower() and "not judged bugs" not in out


def test_markdown_honours_max_comments_per_file() -> None:
    from bot.config import ReviewConfig

    many = tuple(Finding("app/db.py", n, f"Problem {n}.", severity="high") for n in (3, 9, 15))
    review = Review(base="a" * 40, head="b" * 40, findings=many, stats=Stats(), coverage=Coverage())
    md = render(review, "markdown", ReviewConfig(max_comments_per_file=2))
    assert md.count("#### `app/db.py` line") == 2  # two inline, as a PR would get them
    assert "`app/db.py:15`" in md and "Problem 15." in md  # the third in the summary table
    assert render(review, "markdown").count("#### `app/db.py` line") == 3  # no config: no cap


def test_the_pr_summary_puts_findings_and_checks_first_and_run_details_away() -> None:
    from dataclasses import replace

    jargon = (
        "behaviour not compared for find_user (no inputs: parameter types with no literal values, no doctest)"
    )
    review = replace(
        REVIEW,
        notes=(*REVIEW.notes, jargon),
        checked=("model review of 3 file(s)", "security scanners (bandit, secrets, semgrep rules)"),
        stats=replace(REVIEW.stats, stages={"model": 1.5, "tests": 0.4}),
    )
    md = render(review, "markdown")
    summary_part = md.split("\n#### ", 1)[0]  # the summary, not the inline comments after it
    front, details = summary_part.split("<details><summary>Run details</summary>", 1)
    assert "⚠️" not in front and "> " not in front  # no warning callouts
    assert front.index("🛑 1 critical") < front.index("**Checked:** model review of 3 file(s)")
    assert "`app/util.py:40` (outside the diff)" in front
    assert "not compared for `find_user` (no example inputs could be made)" in front
    for telemetry in ("prompt + ", "completion tokens", "time per stage", "no literal values", "chunk(s)"):
        assert telemetry not in front and telemetry in details
    assert "sandbox is off: suggestions are not verified" in front  # plain notes stay as they are
