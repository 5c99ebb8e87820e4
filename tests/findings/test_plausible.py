"""The deterministic sanity checks of the model's own findings (bot/plausible.py)."""

from __future__ import annotations

import pytest

from bot.findings import plausible
from bot.types import Finding

CODE = [
    "def total(xs):",
    "    s = 0",
    "    for x in xs:",
    "        s += x",
    "    return s + 1",
    "",
    "",
    "def find(db, name):",
    "    return db.execute(\"SELECT * FROM t WHERE n = '%s'\" % name)",
]


def model(
    line: int, category: str = "security", cwe: str | None = "CWE-89", severity: str = "high"
) -> Finding:
    return Finding("m.py", line, "claim", severity, category, cwe=cwe)


def test_a_cwe_without_its_sink_nearby_is_kept_as_a_bug_at_its_severity_with_the_reason():
    # a small model copies the one CWE it has seen onto a right diagnosis: the label goes, the finding stays
    f = plausible.check(model(5), CODE)
    assert (f.severity, f.category, f.cwe) == ("high", "bug", None)
    assert "not CWE-89: CWE-89 needs SQL" in (f.evidence or "")


def test_a_cwe_with_its_sink_nearby_stands():
    assert plausible.check(model(9), CODE).severity == "high"


@pytest.mark.parametrize("category", ["performance", "maintainability", "test"])
def test_other_categories_are_advisory(category):
    f = plausible.check(model(5, category=category, cwe=None, severity="medium"), CODE)
    assert f.severity == "low" and category in (f.evidence or "")


@pytest.mark.parametrize("path", ["HISTORY.md", "docs/usage.rst", "CHANGES.markdown", "docs/Guide.AsciiDoc"])
def test_a_finding_on_prose_is_advisory(path):
    f = plausible.check(Finding(path, 3, "claim", "high", "bug"), ["a", "b", "c", "d"])
    assert f.severity == "low" and f"{path} is prose" in (f.evidence or "")


def test_prose_rule_leaves_code_and_scanners_alone():
    assert plausible.check(Finding("src/markdown.py", 5, "claim", "high", "bug"), CODE).severity == "high"
    pins = Finding("requirements.txt", 2, "claim", "high", "bug")  # not prose: it is read by pip
    assert plausible.check(pins, ["a", "b"]).severity == "high"
    secret = Finding("README.md", 3, "key", "high", "security", cwe="CWE-798", source="secrets")
    assert plausible.check(secret, None) == secret


@pytest.mark.parametrize(
    "f",
    [
        model(5, category="bug", cwe=None),  # a bug claim: left to the model's self-check
        model(5, cwe="CWE-1333"),  # a CWE outside the table
        model(5, cwe=None),  # security without a CWE
        Finding("m.py", 5, "bandit says", "high", "security", cwe="CWE-89", source="bandit"),  # scanners
    ],
)
def test_left_alone(f):
    assert plausible.check(f, CODE) == f


def test_unknown_file_text_leaves_security_claims_alone():
    assert plausible.check(model(5), None).severity == "high"


@pytest.mark.parametrize(
    ("line", "severity"),
    [
        ("    return db.execute(\"SELECT * FROM t WHERE n = '%s'\" % name)", "high"),
        ('    return db.execute("SELECT * FROM t WHERE n = " + name)', "high"),
        ('    return db.execute(f"SELECT * FROM t WHERE n = {name}")', "high"),
        ('    return db.execute("SELECT * FROM t WHERE n = %s", (name,))', "low"),  # parameters
        ('    return db.execute("SELECT * FROM t WHERE n = ?", [name])', "low"),
    ],
)
def test_sql_injection_needs_a_query_built_from_strings(line, severity):
    code = ["def find(db, name):", line]
    f = plausible.check(model(2), code)
    assert f.severity == severity
    if severity == "low":
        assert "built from strings" in (f.evidence or "")


@pytest.mark.parametrize(
    ("cwe", "why"),
    [
        ("CWE-2001", "not in the CWE list"),
        ("CWE-310", "category (Cryptographic Issues), not a weakness"),
        ("CWE-2000", "view (Comprehensive CWE Dictionary), not a weakness"),
        ("CWE-264", "category"),
        ("CWE-787", "applies to C, C++ and assembly code only"),
    ],
)
def test_a_cwe_that_cannot_label_a_weakness_in_the_file_is_kept_as_a_bug(cwe, why):
    f = plausible.check(model(9, cwe=cwe), CODE)
    assert (f.severity, f.category, f.cwe) == ("high", "bug", None) and why in (f.evidence or "")


def test_a_c_only_weakness_stands_on_c_code():
    f = Finding("buf.c", 9, "claim", "high", "security", cwe="CWE-787")
    assert plausible.check(f, CODE).severity == "high"
