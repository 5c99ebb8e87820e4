"""Behaviour evidence on the tests' own objects: constructors, properties and methods reached through the
objects the tests build, compared by what the call leaves in `self` (not only what it returns), and a
note for each changed callable no test reaches and nothing can build; the judge's question is whether the
change's own words account for a difference."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from bot.change.diff import parse
from bot.cli.root import cli
from bot.evidence.behaviour import accounts, compare
from bot.evidence.behaviour.prereview_probe import state_repr
from bot.types import ChangeRef, ChangeRequest

from ..conftest import git

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap not installed (apt-get install bubblewrap)"
)
SCHEMA = json.loads((Path(__file__).parents[2] / "bot/schemas/review.schema.json").read_text())


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PREREVIEW_CACHE_DIR", str(tmp_path / "cache"))


SHAPES = """class Option:
    def __init__(self, name, default=None):
        self.name = name
        self.default = default
        self.opts = ["--" + name]

    def __repr__(self):
        return f"<Option {self.name}>"


class Command:
    def __init__(self, name):
        self.name = name
        self.aliases = []

    def __repr__(self):
        return f"<Command {self.name}>"

    @property
    def human_name(self):
        return self.name.replace("_", "-")

    @human_name.setter
    def human_name(self, value):
        self.name = value

    def add_alias(self, alias):
        self.aliases.append(alias)
        return self


class Needs:
    def __init__(self, a, b):
        self.a = a

    def total(self, c):
        return self.a + c
"""
SHAPES_BUG = (
    SHAPES.replace('self.opts = ["--" + name]', 'self.opts = ["-" + name]')
    .replace('return self.name.replace("_", "-")', 'return self.name.replace("_", " ")')
    .replace("self.aliases.append(alias)", "self.aliases.insert(0, alias)")
    .replace("return self.a + c", "return self.a - c")
)
SHAPES_TEST = """from shapes import Command, Option


def test_option():
    assert Option("dry_run").name == "dry_run"


def test_human_name():
    assert Command("dry_run").human_name


def test_aliases():
    c = Command("x").add_alias("a").add_alias("b")
    assert "a" in c.aliases
"""
NOT_ACCOUNTED = {"match": "account for this difference", "text": json.dumps({"accounted": "no", "quote": ""})}


def _review(repo: Path, tmp_path: Path, replies: list[dict]) -> dict:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": replies, "default": {"findings": []}}))
    cfg = tmp_path / "cfg.yml"
    cfg.write_text(yaml.safe_dump({"model": {"backend": "scripted", "script": str(script)}}))
    res = CliRunner().invoke(cli, ["review", "--repo", str(repo), "--config", str(cfg), "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    jsonschema.validate(data, SCHEMA)
    return data


@needs_bwrap
def test_constructors_properties_and_methods_are_compared_on_the_tests_own_objects(
    make_repo, tmp_path
) -> None:
    """The tests pass at base and head. A constructor returns None: its effect is the object it builds; a
    property's getter is the callable; a method's effect is what it leaves in `self`. Each object has its
    own `__repr__`, which shows none of that: the fields are compared. Nothing in the change's words
    accounts for the differences, so each is a medium "is this intended?" with its example."""
    repo = make_repo({"shapes.py": SHAPES, "test_shapes.py": SHAPES_TEST}, {"shapes.py": SHAPES_BUG})
    data = _review(repo, tmp_path, [NOT_ACCOUNTED] * 3)
    found = {f["message"].split("`")[1]: f for f in data["findings"] if f["source"] == "behaviour"}
    assert set(found) == {"Option.__init__", "Command.human_name", "Command.add_alias"}, data["findings"]
    assert all(f["severity"] == "medium" and f["rule_id"] == "behaviour/unexplained" for f in found.values())
    init = found["Option.__init__"]
    assert (
        "Option('dry_run', None): before None and changes self to Option(default=None, name='dry_run', "
        in (init["evidence"])
    )
    assert "opts=['--dry_run'])" in init["evidence"] and "opts=['-dry_run'])" in init["evidence"]
    assert init["line"] == 5 and "is this intended?" in init["message"]
    assert "before 'dry-run'; after 'dry run'" in found["Command.human_name"]["evidence"]
    alias = found["Command.add_alias"]["evidence"]
    # the first call leaves the same aliases on both sides; the second, on an object holding ['a'] at base
    # and head alike, leaves them in another order
    assert "add_alias('a')" not in alias
    assert (
        "add_alias('b'): before <Command x> and changes self to Command(aliases=['a', 'b'], name='x'); "
        "after <Command x> and changes self to Command(aliases=['b', 'a'], name='x')"
    ) in alias
    # reached by no test and its class cannot be built without arguments: said, not silent
    assert any(
        "Needs.total (reached by no test; it could not be called: Needs() failed: TypeError)" in n
        for n in data["notes"]
    ), data["notes"]


@needs_bwrap
def test_a_method_compared_and_found_alike_is_said_not_silent(make_repo, tmp_path) -> None:
    same = SHAPES.replace("self.aliases.append(alias)", "self.aliases += [alias]")
    repo = make_repo({"shapes.py": SHAPES, "test_shapes.py": SHAPES_TEST}, {"shapes.py": same})
    data = _review(repo, tmp_path, [])
    assert not [f for f in data["findings"] if f["source"] == "behaviour"]
    assert (
        "behaviour: `Command.add_alias` gave the same results at base and head on 2 call(s) from the tests "
        "that pass at head"
    ) in data["notes"], data["notes"]


@needs_bwrap
def test_a_difference_the_commit_message_accounts_for_is_listed_with_its_words(make_repo, tmp_path) -> None:
    repo = make_repo({"shapes.py": SHAPES, "test_shapes.py": SHAPES_TEST}, {"shapes.py": SHAPES_BUG})
    git(repo, "commit", "-q", "--amend", "-m", "Update shapes.py\n\nhuman names use spaces, not dashes")
    said = {"accounted": "yes", "quote": "Human names use spaces"}
    replies = [{"match": "Function `Command.human_name`", "text": json.dumps(said)}]
    data = _review(repo, tmp_path, [*replies, NOT_ACCOUNTED, NOT_ACCOUNTED])
    found = {f["message"].split("`")[1] for f in data["findings"] if f["source"] == "behaviour"}
    assert "Command.human_name" not in found and "Option.__init__" in found
    (listed,) = [b for b in data["behaviour"] if b["callable"] == "Command.human_name"]
    assert listed["reason"] == 'the change says so: "Human names use spaces"'


FLAG = """class Flag:
    def __init__(self, name: str, count: int = 1):
        self.name = name
        self.count = count
        self.opts = ["--" + name]

    def __repr__(self):
        return "<Flag>"
"""


@needs_bwrap
def test_a_constructor_no_test_reaches_is_called_through_its_class(make_repo, tmp_path) -> None:
    """No test: `__init__` is called the way code calls it, `Flag(...)`, and what the object holds after
    is compared (its repr says nothing)."""
    repo = make_repo({"flag.py": FLAG}, {"flag.py": FLAG.replace('["--" + name]', '["-" + name]')})
    data = _review(repo, tmp_path, [])
    (f,) = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert f["message"].startswith("Behaviour change in `Flag.__init__`: `Flag(") and f["line"] == 5
    assert "before None and changes self to Flag(count=" in f["evidence"]
    assert "opts=['--" in f["evidence"] and "opts=['-" in f["evidence"].split("; after ")[1]
    assert not any("special method" in n for n in data["notes"])


@needs_bwrap
def test_a_function_no_test_reaches_whose_generated_calls_agree_is_said_not_silent(
    make_repo, tmp_path
) -> None:
    """No test reaches `scale`; Hypothesis's calls from its type hints run at base and head and agree (a
    refactor). The note says what was compared, with one call; before, such a callable was not named
    anywhere (a python-dotenv click command, tuning)."""
    base = "def scale(n: int, k: int) -> int:\n    return n * k\n"
    head = "def scale(n: int, k: int) -> int:\n    out = n * k\n    return out\n"
    repo = make_repo({"calc.py": base}, {"calc.py": head})
    data = _review(repo, tmp_path, [])
    assert not [f for f in data["findings"] if f["source"] == "behaviour"]
    (note,) = [n for n in data["notes"] if "`scale` (reached by no test)" in n]
    assert note.startswith(
        "behaviour: `scale` (reached by no test) gave the same results at base and head on "
    )
    assert "hypothesis" in note and "e.g. `scale(" in note


def test_the_changes_words_are_its_title_description_commit_messages_and_added_docs(make_repo) -> None:
    repo = make_repo(
        {"m.py": "x = 1\n", "CHANGES.rst": "1.0\n", "docs/api.md": "# API\n"},
        {
            "m.py": "x = 2\n",
            "CHANGES.rst": "1.1: x is two now\n1.0\n",
            "docs/api.md": "# API\nx: the count\n",
        },
    )
    base, head = (git(repo, "rev-parse", r).strip() for r in ("HEAD~1", "HEAD"))
    diff = git(repo, "diff", base, head)
    change = ChangeRequest(
        ChangeRef("local", str(repo), base, head), base, head, diff, "T", "B", workdir=repo
    )
    words = accounts.gather(change, parse(diff))
    assert (words.title, words.body, words.commits) == ("T", "B", "head change")
    assert words.docs == "1.1: x is two now\nx: the count"
    text = words.text()
    assert "Commit messages: head change" in text and "Added to the documentation: 1.1" in text
    assert words.contains("X is  two now.") and not words.contains("x is three") and not words.contains("x")


class Shown:
    def __init__(self) -> None:
        self.a, self._private = [1], 2

    def __repr__(self) -> str:
        return "<Shown>"


class Bare:
    pass


def test_state_shows_what_an_object_holds_whatever_its_repr() -> None:
    assert state_repr(Shown()) == "Shown(a=[1])"
    assert state_repr(Bare()) == "Bare()"  # before __init__ fills it
    assert state_repr([1]) is None and state_repr({"a": 1}) is None and state_repr("s") is None
    import collections

    assert state_repr(collections.deque([1])) is None  # a C type: its repr shows more


class Wide:
    def __init__(self) -> None:
        for k in "abcdefghijklmn":
            setattr(self, k, k)
        self.only = ("x",)


def test_state_shows_the_fields_the_callable_reads_first() -> None:
    plain = state_repr(Wide())
    assert plain.startswith("Wide(a='a', b='b'") and plain.endswith(", ...)") and "only=" not in plain
    first = state_repr(Wide(), first={"only", "n"})
    assert first.startswith("Wide(n='n', only=('x',), a='a', b='b'") and first.endswith(", ...)")
    assert state_repr(Wide(), first={"absent"}) == plain  # a name it does not hold changes nothing


def test_a_call_whose_self_held_other_values_is_another_input() -> None:
    ret = {"kind": "return", "repr": "None"}
    b = compare.Call(
        "m.py::C.m", "t::a", (("self", "<C>"),), ret, (("self", "C(x=1)"),), state=(("self", "C(x=0)"),)
    )
    h1 = compare.Call(
        "m.py::C.m", "t::a", (("self", "<C>"),), ret, (("self", "C(x=2)"),), state=(("self", "C(x=0)"),)
    )
    h2 = compare.Call(
        "m.py::C.m", "t::a", (("self", "<C>"),), ret, (("self", "C(x=2)"),), state=(("self", "C(x=9)"),)
    )
    (d,) = compare.differences([b], [h1])
    assert d.before == "None and changes self to C(x=1)" and d.after == "None and changes self to C(x=2)"
    assert compare.differences([b], [h2]) == []
    init = compare.Call("m.py::Opt.__init__", "t::a", (("self", "<x>"), ("name", "'n'")), ret)
    assert init.text() == "Opt('n')"
