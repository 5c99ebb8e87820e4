"""A difference in a callable that a test *added by the change* uses is the author's own account of the new
behaviour: listed as intended (the test named), not asked about. Tests the change only edits or deletes
account for nothing. Origin: a general reviewer's rule, not a corpus case (bot/evidence/behaviour/
addedtests.py)."""

from __future__ import annotations

from pathlib import Path

from bot.change.diff import parse as parse_diff
from bot.evidence.behaviour import addedtests, judge
from bot.evidence.behaviour.accounts import Words
from bot.evidence.behaviour.addedtests import AddedTest
from bot.evidence.behaviour.testfiles import changed_test_files

from .test_behaviour import _diff_of, _review_json, needs_bwrap

CALC = """def scale(n):
    return n * 2


class Box:
    def __init__(self, size):
        self.size = size * 2
"""
CALC_HEAD = CALC.replace("return n * 2", "return n * 3")
TEST = """from calc import scale


def test_positive():
    assert scale(2) > 0
"""
TEST_ADDED = (
    TEST
    + """

def test_triples():
    assert scale(2) == 6
"""
)

DIFF = "\n".join(
    [
        "diff --git a/tests/test_calc.py b/tests/test_calc.py",
        "--- a/tests/test_calc.py",
        "+++ b/tests/test_calc.py",
        "@@ -1,5 +1,9 @@",
        " from calc import scale",
        " ",
        " ",
        " def test_positive():",
        "-    assert scale(2) > 0",
        "+    assert scale(2) > 1",
        "+",
        "+",
        "+def test_triples():",
        "+    assert scale(2) == 6",
        "",
    ]
)


def _target(source: str, qualname: str):
    from bot.evidence.behaviour import callables as cm

    tree = cm.parse(source)
    (d,) = [d for d in cm.definitions(tree) if d.qualname == qualname]
    lines = source.splitlines()
    return cm._record("calc.py", d, d, "modified", d.span[0], lines, lines, cm.module_docs(tree))


def _read(files: dict[str, str]):
    return lambda path: files.get(path)


def test_only_test_functions_new_at_head_count_with_the_names_their_code_uses() -> None:
    base = {"tests/test_calc.py": TEST}
    head = {"tests/test_calc.py": TEST_ADDED.replace("scale(2) > 0", "scale(2) > 1")}
    files = changed_test_files(parse_diff(DIFF), _read(base), _read(head), lambda p: p.startswith("tests/"))
    got = addedtests.added_tests(files)
    assert [t.test for t in got] == ["tests/test_calc.py::test_triples"]  # test_positive is only edited
    assert "scale" in got[0].names
    # a file that is not a test file adds no test
    assert (
        addedtests.added_tests(
            changed_test_files(parse_diff(DIFF), _read(base), _read(head), lambda p: False)
        )
        == ()
    )


def test_a_constructor_or_dunder_is_reached_through_its_class_name() -> None:
    box = _target(CALC, "Box.__init__")
    assert addedtests.used_name(box) == "Box"
    assert addedtests.used_name(_target(CALC, "scale")) == "scale"


def test_an_added_test_using_the_callable_accounts_for_the_difference_with_no_model() -> None:
    c = _target(CALC_HEAD, "scale")
    diff = _diff_of({"kind": "return", "repr": "4"}, {"kind": "return", "repr": "6"})
    other = Words(tests=(AddedTest("tests/t.py::test_other", frozenset({"other"})),))
    verdict, _, _ = judge.decide(c, [diff], None, "", "", words=other)
    assert verdict == "unchecked"  # an added test that does not use it accounts for nothing (no model)
    mine = Words(tests=(AddedTest("tests/t.py::test_triples", frozenset({"scale", "assert"})),))
    verdict, reason, seconds = judge.decide(c, [diff], None, "", "", words=mine)
    assert verdict == "intended" and seconds == 0.0
    assert "`scale`" in reason and "tests/t.py::test_triples" in reason


@needs_bwrap
def test_a_difference_the_change_tests_itself_is_listed_as_intended(make_repo, tmp_path: Path) -> None:
    """`scale(2)` returns 6 at head where it returned 4, and no test fails. With a test added that asserts
    the new result the difference is listed as intended and names that test; without it, the same change
    gets the low "is this intended?" finding."""
    repo = make_repo(
        {"calc.py": CALC, "tests/test_calc.py": TEST},
        {"calc.py": CALC_HEAD, "tests/test_calc.py": TEST_ADDED},
    )
    data = _review_json(repo, tmp_path)
    assert not [f for f in data["findings"] if f["source"] == "behaviour"], data["findings"]
    listed = [b for b in data["behaviour"] if "scale(2)" in b["call"]]
    assert listed and "tests/test_calc.py::test_triples" in listed[0]["reason"], data["behaviour"]


@needs_bwrap
def test_without_the_added_test_the_same_difference_is_asked_about(make_repo, tmp_path: Path) -> None:
    repo = make_repo({"calc.py": CALC, "tests/test_calc.py": TEST}, {"calc.py": CALC_HEAD})
    data = _review_json(repo, tmp_path)
    found = [f for f in data["findings"] if f["source"] == "behaviour"]
    # the scripted model answers nothing about the words: the question stands, unchecked (low)
    assert [(f["rule_id"], f["severity"]) for f in found] == [("behaviour/unchecked", "low")], found
    assert "scale(2): before 4; after 6" in found[0]["evidence"]
