"""Differences seen in tests the change edits: the test ran other code at each side, so its calls are not
compared as they ran; the base run's recorded calls (arguments and `self`, pickled by the tracer) are made
again at both sides instead, so the inputs are the same and a difference left is the code's.

Origin: three tuning-half cases of bench/realworld.py, three projects (python-dotenv ee15221e7c,
marshmallow 8f493e66b3, flask fb54159861): the fix's commit edited an existing test rather than adding
one, so the pull request that puts the bug back also edits that test, and the one call that showed the
bug was dropped with a note ("difference(s) seen only in tests the change edits were not compared")."""

from __future__ import annotations

from pathlib import Path

from bot.evidence.behaviour import compare
from bot.evidence.behaviour.compare import Call

from .test_behaviour import _review_json, needs_bwrap

LOADER = """class Loader:
    def __init__(self, path):
        self.path = path

    def read(self):
        return {} if self.path.startswith("missing") else {"A": "1"}

    def load(self):
        data = self.read()
        if not data:
            return False
        for key in data:
            pass
        return True
"""
LOADER_BUG = LOADER.replace("        if not data:\n            return False\n", "")
TEST = """from loader import Loader


def test_missing_file():
    result = Loader("missing.env").load()
    assert result is False


def test_present_file():
    assert Loader("app.env").load() is True
"""
TEST_EDITED = TEST.replace(
    '    result = Loader("missing.env").load()\n    assert result is False\n',
    '    Loader("missing.env").load()\n',
)


def _call(origin: str, result: str, pickled: tuple[str, ...] = ("p",)) -> Call:
    return Call("m.py::f", origin, (("x", "1"),), {"kind": "return", "repr": result}, pickled=pickled)


def test_differing_takes_base_calls_of_the_chosen_tests_whose_head_call_gave_another_result() -> None:
    base = [_call("t.py::test_a", "1"), _call("t.py::test_b", "1"), _call("t.py::test_c", "1")]
    head = [_call("t.py::test_a", "2"), _call("t.py::test_b", "1"), _call("t.py::test_c", "2")]
    got = compare.differing(base, head, lambda origin: origin != "t.py::test_c")
    assert [c.origin for c in got] == ["t.py::test_a"]  # test_b agrees; test_c is not among the chosen


@needs_bwrap
def test_a_difference_in_a_test_the_change_edits_is_compared_on_base_calls_made_again(
    make_repo, tmp_path: Path
) -> None:
    """The change drops the early `return False` and edits the test that checked it (the assertion goes).
    The edited test's call `Loader('missing.env').load()` gave False at base and True at head; made again
    at both sides on base's pickled `self`, it still does: a finding on the changed method, with the call
    and both results, and the note says the edited test's call was made again."""
    repo = make_repo(
        {"loader.py": LOADER, "tests/test_loader.py": TEST},
        {"loader.py": LOADER_BUG, "tests/test_loader.py": TEST_EDITED},
    )
    data = _review_json(repo, tmp_path)
    found = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert found, (data["notes"], data.get("skipped"))
    (f,) = found
    assert f["path"] == "loader.py" and 7 <= f["line"] <= 12, f
    assert "before False" in f["evidence"] and "after True" in f["evidence"], f["evidence"]
    assert any("made again at both sides on the recorded arguments" in n for n in data["notes"]), data[
        "notes"
    ]


SCALE = """FACTOR = 2


def scale(x):
    return x * FACTOR
"""
SCALE_TEST = """import scale as mod


def test_scale():
    assert mod.scale(2) == 4
"""


@needs_bwrap
def test_a_difference_the_test_edit_alone_makes_is_gone_when_the_call_is_made_again(
    make_repo, tmp_path: Path
) -> None:
    """The edited test changes a module global before the same call (`scale(2)`: 4 at base, 6 at head);
    the code change is a rewrite with the same behaviour. Made again at both sides on the same argument,
    the call agrees: no finding."""
    edited = SCALE_TEST.replace(
        "    assert mod.scale(2) == 4\n", "    mod.FACTOR = 3\n    assert mod.scale(2) == 6\n"
    )
    repo = make_repo(
        {"scale.py": SCALE, "tests/test_scale.py": SCALE_TEST},
        {"scale.py": SCALE.replace("return x * FACTOR", "return FACTOR * x"), "tests/test_scale.py": edited},
    )
    data = _review_json(repo, tmp_path)
    assert not [f for f in data["findings"] if f["source"] == "behaviour"], data["findings"]


def test_calls_in_edited_tests_are_recorded_and_pickled_past_the_callables_caps(tmp_path: Path) -> None:
    """A callable the other tests call often: its caps (`max_calls`, `replays`) are used up before the
    edited test runs; that test's calls are still recorded and pickled, as they can only be compared made
    again. A test the change does not edit gets nothing past the caps."""
    from .test_behaviour import _plugin_alone

    (tmp_path / "mod.py").write_text("def f(x):\n    return x + 1\n")
    (tmp_path / "test_a.py").write_text(
        "from mod import f\n\n\ndef test_many():\n    for k in range(3):\n        assert f(k) == k + 1\n"
    )
    (tmp_path / "test_b.py").write_text(
        "from mod import f\n\n\ndef test_other():\n    assert f(10) == 11\n\n\n"
        "def test_edited():\n    assert f(20) == 21\n"
    )
    edited = {"functions": ["test_b.py::test_edited"], "files": [], "dirs": []}
    calls = _plugin_alone(
        tmp_path, {"mod.py": ["f"]}, "test_a.py", "test_b.py", max_calls=2, replays=1, edited=edited
    )
    by_arg = {c.args[0][1]: c for c in calls}
    assert set(by_arg) == {"0", "1", "20"}, sorted(by_arg)  # f(2) and f(10) over max_calls; f(20) kept
    assert by_arg["0"].pickled and not by_arg["1"].pickled  # replays=1 for the tests the change keeps
    assert by_arg["20"].pickled
