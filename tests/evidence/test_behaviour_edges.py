"""Edge variants: a call from the tests made again with one argument at an edge of its type (empty, 0,
negated), at base and at head, so a regression one step from the tests' inputs is seen (issue 26)."""

from __future__ import annotations

import importlib
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from bot.evidence.behaviour import compare, judge, rules
from bot.evidence.behaviour.callables import Changed
from bot.models.scripted import ScriptedModel

from .test_behaviour import _plugin_alone
from .test_behaviour_objects import _review

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap not installed (apt-get install bubblewrap)"
)


def test_each_argument_is_tried_at_the_edges_of_its_own_type(tmp_path) -> None:
    (tmp_path / "stats.py").write_text(
        "def mean(xs, scale=1, label='Mean'):\n    return sum(xs) / len(xs) * scale\n"
    )
    (tmp_path / "test_stats.py").write_text(
        "from stats import mean\n\n\ndef test_mean():\n    assert mean([2, 4], 3, label='x') == 9\n"
    )
    calls = _plugin_alone(tmp_path, {"stats.py": ["mean"]}, variants=2, edges=20)
    edges = sorted(
        (c.variant, dict(c.args)[c.variant.split()[-1]], c.result.get("type") or c.result["repr"])
        for c in calls
        if c.variant.startswith("edge ")
    )
    assert edges == [
        ("edge scale", "-3", "-9.0"),
        ("edge scale", "0", "0.0"),
        ("edge xs", "[2]", "6.0"),
        ("edge xs", "[]", "ZeroDivisionError"),
    ]  # two arguments per call at most: `label` (a keyword) is not tried after xs and scale


def test_edges_are_off_without_a_budget_and_stop_at_it(tmp_path) -> None:
    (tmp_path / "m.py").write_text("def f(n):\n    return n * 2\n")
    (tmp_path / "test_m.py").write_text(
        "from m import f\n\n\ndef test_f():\n    assert [f(n) for n in (3, 4, 5)] == [6, 8, 10]\n"
    )
    assert not [c for c in _plugin_alone(tmp_path, {"m.py": ["f"]}, variants=3) if c.variant]
    (tmp_path / "t.jsonl").unlink()
    varied = [c for c in _plugin_alone(tmp_path, {"m.py": ["f"]}, variants=3, edges=3) if c.variant]
    assert len(varied) == 3


def _changed(base: str, head: str) -> Changed:
    return Changed(
        "m.py", "f", "modified", (1, 4), (1, 4), 2, "def f(n):", "", (), False, False, False, head, base
    )


def _diff(base: dict, head: dict) -> compare.Difference:
    def told(r: dict) -> str:
        return r.get("repr") or f"raises {r.get('type')}: {r.get('message')}"

    return compare.Difference(
        "m.py::f", "f([])", "test_m.py::test_f", told(base), told(head), base, head, variant="edge n"
    )


RAISES = {"kind": "raise", "type": "ValueError", "message": "n must be at least 1"}
RETURNS = {"kind": "return", "repr": "[]"}


def test_a_new_failure_at_an_edge_is_a_finding_unless_the_change_added_the_check() -> None:
    crash = _diff(RETURNS, {"kind": "raise", "type": "ZeroDivisionError", "message": "division by zero"})
    plain = _changed("def f(n):\n    return 1 / len(n) if n else 0\n", "def f(n):\n    return 1 / len(n)\n")
    assert rules.edge_failure(plain, [crash]) == [crash]
    validation = _diff(RETURNS, RAISES)
    added = _changed(
        "def f(n):\n    return n\n",
        "def f(n):\n    if not n:\n        raise ValueError('n must be at least 1')\n",
    )
    assert rules.edge_failure(added, [validation]) == []  # a check the change added: intended
    assert rules.edge_failure(plain, [validation]) == [
        validation
    ]  # raised from elsewhere: not the change's own


def test_a_removed_check_that_rejected_an_edge_is_a_finding() -> None:
    lost = _diff(RAISES, RETURNS)
    removed = _changed(
        "def f(n):\n    if n < 1:\n        raise ValueError('n must be at least 1')\n    return []\n",
        "def f(n):\n    return []\n",
    )
    assert rules.lost_check(removed, [lost]) == [lost]
    kept = _changed(removed.base_source, removed.base_source + "\n")
    assert rules.lost_check(kept, [lost]) == []  # the check is still there: some other cause


def test_a_removed_check_seen_on_the_tests_own_call_is_a_plain_finding() -> None:
    removed = _changed(
        "def f(n):\n    if n < 1:\n        raise ValueError('n must be at least 1')\n    return []\n",
        "def f(n):\n    return []\n",
    )
    lost = replace(_diff(RAISES, RETURNS), variant="")
    got = judge.judge(removed, [lost], model=None, title="", body="", head_line=None)
    assert [(f.rule_id, f.severity) for f in got.findings] == [("behaviour/lost-check", "medium")]


def test_an_edge_rule_outranks_the_question_the_plain_differences_got() -> None:
    """An oracle outranks the model's "is this intended?" of the same severity (read words: medium) and
    of a lower one (no model: low), and replaces it."""
    removed = _changed(
        "def f(n):\n    if n < 1:\n        raise ValueError('n must be at least 1')\n    return [n]\n",
        "def f(n):\n    return [n, n]\n",
    )
    plain = replace(
        _diff({"kind": "return", "repr": "[2]"}, {"kind": "return", "repr": "[2, 2]"}), variant=""
    )
    edge = _diff(RAISES, RETURNS)
    only_plain = judge.judge(removed, [plain], model=None, title="", body="", head_line=None)
    assert [(f.rule_id, f.severity) for f in only_plain.findings] == [("behaviour/unchecked", "low")]
    both = judge.judge(removed, [plain, edge], model=None, title="", body="", head_line=None)
    assert [(f.rule_id, f.severity) for f in both.findings] == [("behaviour/edge-lost-check", "medium")]
    assert list(both.examples) == [both.findings[0].fingerprint]
    no = '{"accounted": "no", "quote": ""}'
    model = ScriptedModel({"replies": [], "default": {"text": no}})
    kw = {"model": lambda: model, "title": "Tidy f", "body": "", "head_line": None}
    asked = judge.judge(removed, [plain], **kw)  # type: ignore[arg-type]
    assert [(f.rule_id, f.severity) for f in asked.findings] == [("behaviour/unexplained", "medium")]
    both = judge.judge(removed, [plain, edge], **kw)  # type: ignore[arg-type]
    assert [(f.rule_id, f.severity) for f in both.findings] == [("behaviour/edge-lost-check", "medium")]


MEAN = "def mean(xs):\n    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)\n"
MEAN_BUG = "def mean(xs):\n    total = sum(xs)\n    return total / len(xs)\n"
MEAN_TEST = "from stats import mean\n\n\ndef test_mean():\n    assert mean([2, 4]) == 3\n"


@needs_bwrap
def test_a_guard_lost_for_an_empty_input_no_test_gives_is_a_finding_with_the_call(
    make_repo, tmp_path
) -> None:
    repo = make_repo({"stats.py": MEAN, "test_stats.py": MEAN_TEST}, {"stats.py": MEAN_BUG})
    data = _review(repo, tmp_path, [])
    assert not any(f["source"] == "tests" for f in data["findings"])  # the test passes at head
    (f,) = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert (f["rule_id"], f["severity"], f["path"], f["line"]) == (
        "behaviour/edge-failure",
        "medium",
        "stats.py",
        2,
    )
    assert "mean([]): before 0.0; after raises ZeroDivisionError" in f["evidence"]
    assert "at an edge of its type" in f["message"]


CHUNK = (
    "def chunks(items, n):\n    if n < 1:\n        raise ValueError('n must be at least 1')\n"
    "    return [items[i : i + n] for i in range(0, len(items), n)]\n"
)
CHUNK_BUG = "def chunks(items, n):\n    return [items[i : i + n] for i in range(0, len(items), n)]\n"
CHUNK_TEST = (
    "from chunk import chunks\n\n\ndef test_chunks():\n    assert chunks([1, 2, 3], 2) == [[1, 2], [3]]\n"
)


@needs_bwrap
def test_a_removed_check_is_a_finding_and_an_added_one_is_not(make_repo, tmp_path) -> None:
    repo = make_repo({"chunk.py": CHUNK, "test_chunk.py": CHUNK_TEST}, {"chunk.py": CHUNK_BUG})
    (f,) = [f for f in _review(repo, tmp_path, [])["findings"] if f["source"] == "behaviour"]
    assert (f["rule_id"], f["severity"]) == ("behaviour/edge-lost-check", "medium")
    assert "chunks([1, 2, 3], -2): before raises ValueError: n must be at least 1; after []" in f["evidence"]

    other = tmp_path / "added"
    other.mkdir()
    shutil.rmtree(repo)
    repo = make_repo({"chunk.py": CHUNK_BUG, "test_chunk.py": CHUNK_TEST}, {"chunk.py": CHUNK})
    data = _review(repo, other, [])
    assert not [f for f in data["findings"] if f["source"] == "behaviour" and f["severity"] != "low"]


EVENLY = '''def evenly(groups):
    """Items of the groups, one of each in turn."""
    if not groups:
        return
    longest = max(len(g) for g in groups)
    for i in range(longest):
        for g in groups:
            if i < len(g):
                yield g[i]
'''
EVENLY_BUG = EVENLY.replace("    if not groups:\n        return\n", "")
EVENLY_TEST = (
    "from mix import evenly\n\n\ndef test_evenly():\n    assert list(evenly([[1, 2], [3]])) == [1, 3, 2]\n"
)


def test_a_variants_generator_is_run_in_the_child_so_it_fails_where_it_would(tmp_path) -> None:
    (tmp_path / "mix.py").write_text(EVENLY_BUG)
    (tmp_path / "test_mix.py").write_text(EVENLY_TEST)
    calls = _plugin_alone(tmp_path, {"mix.py": ["evenly"]}, variants=2, edges=10)
    got = {dict(c.args)["groups"]: c.result for c in calls if c.variant == "edge groups"}
    assert (got["[]"]["kind"], got["[]"]["type"]) == ("raise", "ValueError")  # max() of nothing
    assert got["[[1, 2]]"] == {"kind": "return", "repr": "yields [1, 2]"}
    plain = [c.result.get("repr", "") for c in calls if not c.variant]
    assert plain and not any(r.startswith("yields") for r in plain)  # the test's own: left to the test


@needs_bwrap
def test_a_generator_that_fails_on_an_empty_input_now_is_a_finding(make_repo, tmp_path) -> None:
    repo = make_repo({"mix.py": EVENLY, "test_mix.py": EVENLY_TEST}, {"mix.py": EVENLY_BUG})
    (f,) = [f for f in _review(repo, tmp_path, [])["findings"] if f["source"] == "behaviour"]
    assert f["rule_id"] == "behaviour/edge-failure"
    assert "evenly([]): before yields []; after raises ValueError" in f["evidence"]


def test_a_generators_later_steps_are_not_more_calls(tmp_path) -> None:
    """settrace reports each resumption of a generator as a `call`, with its locals: one call of the
    generator used up the per-input variants, and a local reassigned inside it looked like an argument."""
    (tmp_path / "mix.py").write_text(
        EVENLY.replace("    longest =", "    groups = list(groups)\n    longest =")
    )
    (tmp_path / "test_mix.py").write_text(EVENLY_TEST)
    calls = _plugin_alone(tmp_path, {"mix.py": ["evenly"]}, variants=1, edges=10)
    assert [c.args for c in calls if not c.variant] == [(("groups", "[[1, 2], [3]]"),)]
    assert sorted(dict(c.args)["groups"] for c in calls if c.variant == "edge groups") == ["[[1, 2]]", "[]"]


OPENED = """import contextlib


@contextlib.contextmanager
def opened(path):
    handle = None
    try:
        handle = open(path)
        yield handle
    except OSError:
        if handle is not None:
            handle.close()
        raise
    else:
        handle.close()
"""
OPENED_BUG = OPENED.replace("    handle = None\n", "")
OPENED_TEST = (
    "from files import opened\n\n\ndef test_opened():\n    with opened(__file__) as h:\n"
    "        assert h.read()\n"
)


def test_a_programming_error_where_base_raised_another_is_a_finding() -> None:
    bound = _diff(
        {"kind": "raise", "type": "FileNotFoundError", "message": "no such file"},
        {"kind": "raise", "type": "UnboundLocalError", "message": "cannot access local variable 'handle'"},
    )
    same = _diff(bound.head, bound.head)
    plain = _changed(OPENED, OPENED_BUG)
    assert rules.programming_error(plain, [bound, same]) == [bound]
    assert rules.programming_error(plain, [_diff(RETURNS, RAISES)]) == []  # not always a bug


@needs_bwrap
def test_an_error_path_broken_at_an_edge_is_a_finding_with_the_call(make_repo, tmp_path) -> None:
    """dotenv's `rewrite` (a tuning case): the cleanup of a failed open read a name the failed line never
    bound; the tests only open files that exist, the empty path does not."""
    repo = make_repo({"files.py": OPENED, "test_files.py": OPENED_TEST}, {"files.py": OPENED_BUG})
    data = _review(repo, tmp_path, [])
    (f,) = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert (f["rule_id"], f["severity"], f["path"]) == (
        "behaviour/edge-programming-error",
        "medium",
        "files.py",
    )
    assert (
        "before raises FileNotFoundError" in f["evidence"]
        and "after raises UnboundLocalError" in f["evidence"]
    )


@needs_bwrap
def test_a_variant_is_compared_even_where_the_change_edits_its_test(make_repo, tmp_path) -> None:
    """dateutil's `_to_decimal` (a tuning case): the change also edited the test file outside any function
    (a parametrize table), so every call from it was left out; its edge `'inf'` had the same arguments on
    both sides, and the edit cannot account for a call the test never made."""
    edited = "SIZES = [2]\n\n\n" + CHUNK_TEST
    repo = make_repo(
        {"chunk.py": CHUNK, "test_chunk.py": CHUNK_TEST}, {"chunk.py": CHUNK_BUG, "test_chunk.py": edited}
    )
    data = _review(repo, tmp_path, [])
    (f,) = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert (f["rule_id"], f["severity"]) == ("behaviour/edge-lost-check", "medium")
    assert not any("seen only in tests the change edits" in n for n in data["notes"])


def test_a_str_that_spells_a_number_is_varied_as_a_number_too(monkeypatch) -> None:
    """dateutil's `_to_decimal('2003')` (a tuning case): its edge "inf" reached the finiteness check."""
    from bot.evidence.behaviour import harness

    monkeypatch.syspath_prepend(str(Path(harness.__file__).parent))  # as the sandbox imports it
    variants = importlib.import_module("prereview_variants")
    assert variants.edges("2003") == ["", "-2003", "inf"]
    assert variants.edges(" -2.5 ") == ["", "2.5", "inf"] and variants.edges("0") == ["", "-1", "inf"]
    assert variants.edges("abc") == [""] and variants.edges("inf") == [""] and variants.edges("nan") == [""]
