"""Outer variants: the test's own call of a project function that reaches a changed callable, made again
after the test with one plain argument varied (letter case, a line break at its end, an edge of its type),
at base and at head; a result that ignored that variation at base and depends on it at head is a finding
on the changed lines (prereview_outer.py, varied.lost_invariance; issue 26)."""

from __future__ import annotations

import shutil

import pytest

from bot.evidence.behaviour import compare, judge, rules
from bot.evidence.behaviour.callables import Changed

from .test_behaviour import _plugin_alone
from .test_behaviour_objects import _review

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap not installed (apt-get install bubblewrap)"
)

# the public function builds the objects the changed one is given: a list of words, not the test's text
KW = """def _group(words):
    out = []
    for w in words:
        if out and w.upper() == "AS":
            out[-1] = out[-1] + " " + w
        else:
            out.append(w)
    return out


def parse(text, strict=False):
    return _group(text.split())
"""
KW_BUG = KW.replace('w.upper() == "AS"', 'w == "AS"')
KW_TEST = "from kw import parse\n\n\ndef test_parse():\n    assert parse('x AS y') == ['x AS', 'y']\n"


def _outer_calls(tmp_path, source: str, test: str, **spec) -> list[compare.Call]:
    (tmp_path / "kw.py").write_text(source)
    (tmp_path / "test_kw.py").write_text(test)
    return [
        c for c in _plugin_alone(tmp_path, {"kw.py": ["_group"]}, **spec) if c.variant.startswith("outer ")
    ]


def test_the_tests_outer_call_is_made_again_varied_with_the_unvaried_result_beside_it(tmp_path) -> None:
    calls = _outer_calls(tmp_path, KW, KW_TEST, outer=4, outer_calls=20)
    got = {(c.variant, c.expr): c.result["repr"] for c in calls}
    assert got == {
        ("outer case text", "parse(text='x as y', strict=False)"): "['x as', 'y']",
        ("outer case text", "parse(text='X AS Y', strict=False)"): "['X AS', 'Y']",
        ("outer line break text", "parse(text='x AS y\\n', strict=False)"): "['x AS', 'y']",
        ("outer edge text", "parse(text='', strict=False)"): "[]",
    }  # a bool has no case, no line break and no edge of its own
    assert {c.callable for c in calls} == {"kw.py::_group"}  # recorded as the changed callable's
    assert all(c.result["unvaried"] == {"kind": "return", "repr": "['x AS', 'y']"} for c in calls)
    assert calls[0].text() == calls[0].expr  # shown as the call the test made


def test_no_outer_call_without_a_budget_nor_when_the_test_calls_the_changed_callable_itself(tmp_path) -> None:
    assert _outer_calls(tmp_path, KW, KW_TEST, outer=4) == []  # outer_calls 0: off
    (tmp_path / "t.jsonl").unlink()
    direct = "from kw import _group\n\n\ndef test_group():\n    assert _group(['x', 'AS']) == ['x AS']\n"
    assert _outer_calls(tmp_path, KW, direct, outer=4, outer_calls=20) == []


def test_an_outer_call_given_an_object_the_test_built_is_not_made_again(tmp_path) -> None:
    """Only plain data is copied into the child: an object's state after the test is not the input."""
    test = (
        "from kw import parse\n\n\nclass Text(str):\n    pass\n\n\n"
        "def test_parse():\n    assert parse(Text('x AS y')) == ['x AS', 'y']\n"
    )
    assert _outer_calls(tmp_path, KW, test, outer=4, outer_calls=20) == []


def _changed() -> Changed:
    return Changed(
        "kw.py",
        "_group",
        "modified",
        (1, 8),
        (1, 8),
        4,
        "def _group(words):",
        "",
        (),
        False,
        False,
        False,
        KW_BUG,
        KW,
    )


def _diff(
    variant: str, base: str, head: str, unvaried: str = "['x AS', 'y']", head_unvaried: str | None = None
):
    def r(text: str, was: str) -> dict:
        return {"kind": "return", "repr": text, "unvaried": {"kind": "return", "repr": was}}

    return compare.Difference(
        "kw.py::_group",
        "parse(text='x as y', strict=False)",
        "test_kw.py::test_parse",
        base,
        head,
        r(base, unvaried),
        r(head, head_unvaried or unvaried),
        variant=variant,
    )


def test_a_result_that_ignored_letter_case_at_base_and_depends_on_it_at_head_breaks_an_invariance() -> None:
    lost = _diff("outer case text", "['x as', 'y']", "['x', 'as', 'y']")
    assert rules.varied.lost_invariance(_changed(), [lost]) == [lost]
    # base did not ignore it either: a difference, but no invariance lost
    assert (
        rules.varied.lost_invariance(
            _changed(), [_diff("outer case text", "['x', 'as', 'y']", "['x as', 'y']")]
        )
        == []
    )
    # the call the test made differs too: the plain calls' business, not this rule's
    moved = _diff("outer case text", "['x as', 'y']", "['x', 'as', 'y']", head_unvaried="['x', 'AS', 'y']")
    assert rules.varied.lost_invariance(_changed(), [moved]) == []
    # a final line break the result ignored at base makes another item at head; kept as text, it is the
    # same result up to the variation (letting it through is behaviour/accepts-line-break's question)
    split = _diff("outer line break text", "['x AS', 'y']", "['x AS', 'y', '']")
    assert rules.varied.lost_invariance(_changed(), [split]) == [split]
    kept = _diff("outer line break text", "['x AS', 'y']", "['x AS', 'y\\n']")
    assert rules.varied.lost_invariance(_changed(), [kept]) == []


def test_an_outer_difference_no_rule_decides_is_not_a_finding_and_never_an_example_to_restore() -> None:
    edge = _diff("outer edge text", "[]", "['']")  # edges are seldom invariant: no rule fires
    got = judge.judge(_changed(), [edge], model=None, title="", body="", head_line=None)
    assert got.findings == []
    lost = _diff("outer case text", "['x as', 'y']", "['x', 'as', 'y']")
    got = judge.judge(_changed(), [lost], model=None, title="", body="", head_line=None)
    assert [(f.rule_id, f.severity) for f in got.findings] == [("behaviour/outer-invariance", "medium")]
    assert "(the call that reached it in test `test_kw.py::test_parse`" in got.findings[0].message
    assert list(got.examples.values()) == [[]]  # `parse(...)` is not a call of `_group`: nothing to replay


@needs_bwrap
def test_a_check_made_case_sensitive_is_a_finding_on_the_changed_line_with_the_call(
    make_repo, tmp_path
) -> None:
    repo = make_repo({"kw.py": KW, "test_kw.py": KW_TEST}, {"kw.py": KW_BUG})
    data = _review(repo, tmp_path, [])
    assert not any(f["source"] == "tests" for f in data["findings"])  # the test passes at head
    (f,) = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert (f["rule_id"], f["severity"], f["path"], f["line"]) == (
        "behaviour/outer-invariance",
        "medium",
        "kw.py",
        4,
    )
    assert "parse(text='x as y', strict=False): before ['x as', 'y']; after ['x', 'as', 'y']" in f["evidence"]


def test_the_inputs_made_again_are_those_naming_the_callables_literals_first(tmp_path) -> None:
    """Of many outer inputs only a few are made again: those whose data holds the changed callable's own
    literals (seeded.words: `"AS"` on its changed line), then a sample by hash, never the first tests'."""
    many = "".join(f"    assert parse('w{i} v{i}')\n" for i in range(30))
    test = f"from kw import parse\n\n\ndef test_many():\n{many}    assert parse('x as y')\n"
    words = {"kw.py::_group": {"AS": 2}}
    calls = _outer_calls(tmp_path, KW, test, outer=1, outer_calls=20, words=words)
    assert {c.result["unvaried"]["repr"] for c in calls} == {"['x as', 'y']"}
    (tmp_path / "t.jsonl").unlink()
    calls = _outer_calls(tmp_path, KW, test, outer=1, outer_calls=20)  # no literal: one sample by hash
    assert len({c.result["unvaried"]["repr"] for c in calls}) == 1


def test_a_callables_words_are_its_str_literals_weighed_by_the_changed_lines() -> None:
    from bot.evidence.behaviour import seeded

    assert seeded.words(_changed()) == {"AS": 2}  # `"AS"` is on the changed line; `" "` is too short


def test_the_note_on_a_callable_with_no_difference_counts_the_outer_calls_made_again() -> None:
    from bot.evidence.behaviour import said

    def call(variant: str = "") -> compare.Call:
        return compare.Call(
            "kw.py::_group", "test_kw.py::test_parse", (("words", "['x']"),), {}, variant=variant
        )

    calls = [call(), call("outer case text"), call("outer edge text"), call("edge words")]
    assert said.alike([_changed()], calls, set()) == [
        "behaviour: `_group` gave the same results at base and head on 1 call(s) from the tests that pass at "
        "head, and on 2 of their outer calls made again varied"
    ]  # the callable's own edge variant is not one of the tests' calls


SHEET = """class Sheet:
    def __init__(self, sep):
        self.sep = sep

    def cells(self, line):
        return _split(line, self.sep)


def _split(line, sep):
    return [c.strip() for c in line.split(sep)]
"""


def test_a_methods_outer_call_is_made_again_on_a_copy_of_self_shown_by_what_it_holds(tmp_path) -> None:
    (tmp_path / "sheet.py").write_text(SHEET)
    (tmp_path / "test_sheet.py").write_text(
        "from sheet import Sheet\n\n\ndef test_cells():\n    s = Sheet(';')\n"
        "    assert s.cells('a; b') == ['a', 'b']\n    s.sep = ','  # after the call: not what it saw\n"
    )
    calls = [
        c for c in _plugin_alone(tmp_path, {"sheet.py": ["_split"]}, outer=4, outer_calls=20) if c.variant
    ]
    got = {(c.variant, c.expr): c.result["repr"] for c in calls if c.variant.startswith("outer ")}
    assert got[("outer case line", "Sheet(…).cells(line='A; B')")] == "['A', 'B']"
    assert got[("outer edge line", "Sheet(…).cells(line='')")] == "['']"
    assert {dict(c.args)["self"] for c in calls if c.variant.startswith("outer ")} == {"Sheet(sep=';')"}
