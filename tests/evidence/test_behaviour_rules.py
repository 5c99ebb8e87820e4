"""The behaviour rules as data (bot/evidence/behaviour/rules.py): the judge iterates over the table, and the
bench prints each rule's hits per corpus (bench/rulehits.py)."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import sys
from pathlib import Path

import pytest

from bot.evidence.behaviour import compare, judge, rules
from bot.evidence.behaviour.callables import Changed
from bot.types import SEVERITIES

ROOT = Path(__file__).resolve().parents[2]


def _target(doc: str = "") -> Changed:
    return Changed("m.py", "f", "modified", (1, 3), (1, 3), 2, "def f(xs):", doc, (), False, False, False)


def _diff(before: dict, after: dict, origin: str = "t::a") -> compare.Difference:
    return compare.Difference(
        "m.py::f", "f([1])", origin, compare.describe(before), compare.describe(after), before, after
    )


LOST = _diff({"kind": "return", "repr": "[1]"}, {"kind": "return", "repr": "None"})


def test_every_row_has_an_id_severity_why_and_origin_and_ids_are_unique() -> None:
    ids = [r.id for r in rules.RULES]
    assert len(ids) == len(set(ids)) and all(i.startswith("behaviour/") for i in ids)
    for r in rules.RULES:
        assert r.severity in SEVERITIES and r.why and r.origin and r.action in ("report", "list")
        assert r.kind in ("plain", "wrapped", "line break", "edge", "steered", "outer")
        assert (r.severity == "info") == (r.action == "list")


def test_every_rule_id_the_behaviour_code_can_give_has_a_row() -> None:
    """No rule hides in code: each `behaviour/...` id written in the judge and the engine is in the table."""
    found = set()
    for name in ("judge.py", "engine.py", "rules.py"):
        tree = ast.parse((ROOT / "bot/evidence/behaviour" / name).read_text())
        found |= {
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("behaviour/")
        }
    assert found and found <= set(rules.BY_ID), found - set(rules.BY_ID)


def test_the_judge_takes_severity_and_presence_from_the_table(monkeypatch) -> None:
    kw = {"model": None, "title": "", "body": "", "head_line": "return xs"}
    (f,) = judge.judge(_target(), [LOST], **kw).findings
    assert (f.rule_id, f.severity) == ("behaviour/lost-result", "medium")
    assert "It returns None now where it returned a value." in f.message
    row = rules.BY_ID["behaviour/lost-result"]
    higher = tuple(dataclasses.replace(r, severity="high") if r is row else r for r in rules.RULES)
    monkeypatch.setattr(rules, "RULES", higher)
    assert [f.severity for f in judge.judge(_target(), [LOST], **kw).findings] == ["high"]
    # without its row the rule does not exist: the difference goes on to the model's rows (no model here)
    monkeypatch.setattr(rules, "RULES", tuple(r for r in rules.RULES if r.id != row.id))
    assert [f.rule_id for f in judge.judge(_target(), [LOST], **kw).findings] == ["behaviour/unchecked"]


def _rulehits():
    spec = importlib.util.spec_from_file_location("bench_rulehits", ROOT / "bench" / "rulehits.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_rulehits"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("corpus", ["quixbugs", "tests removed"])
def test_the_bench_prints_hits_per_rule_per_corpus(corpus: str) -> None:
    def f(rule: str, severity: str, located: bool) -> dict:
        return {"source": "behaviour", "rule_id": rule, "severity": severity, "located": located}

    rows = [
        {"c": corpus, "bug": True, "findings": [f("behaviour/lost-result", "medium", True)]},
        {"c": corpus, "bug": True, "findings": [f("behaviour/unexplained", "low", False)]},
        {"c": corpus, "bug": False, "findings": [f("behaviour/unexplained", "low", False)]},
        {"c": corpus, "bug": False, "findings": [f("behaviour/new-failure", "high", False)]},
        {"c": "other", "bug": False, "findings": [{"source": "model", "rule_id": "", "severity": "high"}]},
    ]
    out = _rulehits().table(
        rows, corpus=lambda r: r["c"], is_bug=lambda r: r["bug"], located=lambda r, x: x["located"]
    )
    lines = out.splitlines()
    at = lines.index(f"  {corpus}: 2 bug case(s), 2 other case(s)")
    mine = {ln.split()[0]: ln for ln in lines[at + 1 : at + 1 + len(rules.RULES)]}
    assert set(mine) == set(rules.BY_ID)  # every row, hits or not
    assert "bugs   1/1   other   0/0" in mine["behaviour/lost-result"]
    assert "bugs   0/1   other   0/1" in mine["behaviour/unexplained"]
    assert "bugs   0/0   other   1/1" in mine["behaviour/new-failure"]
    assert "general oracle: a lost return value" in mine["behaviour/lost-result"]
