"""The tests' own calls made again with the changed lines' literals (bot/evidence/behaviour/seeded.py).

Origin: a general idea (constant seeding in test generation), not a corpus case. The tests here stop one
value short of the changed branch; the changed lines name that value, and running it is the evidence."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jsonschema
from click.testing import CliRunner

from bot.cli.root import cli
from bot.evidence.behaviour import seeded
from bot.evidence.behaviour.compare import Call

from .test_behaviour import SCHEMA, _config, needs_bwrap

FLAGS = '''def option(text):
    """The option's name without its dashes."""
    if text.startswith("--"):
        return text[2:]
    return text
'''
FLAGS_HEAD = FLAGS.replace('startswith("--")', 'startswith("-")')
FLAGS_TEST = """from flags import option


def test_long_option():
    assert option("--all") == "all"
"""


def _changed(base: str, head: str, path: str = "flags.py"):
    from bot.evidence.behaviour import callables as cm

    tree, old = cm.parse(head), cm.parse(base)
    (d,) = cm.definitions(tree)
    (b,) = cm.definitions(old)
    return cm._record(
        path, d, b, "modified", d.span[0], head.splitlines(), base.splitlines(), cm.module_docs(tree)
    )


def test_the_literals_of_the_changed_lines_only() -> None:
    c = _changed(FLAGS, FLAGS_HEAD)
    assert seeded.literals(c) == ["--", "-"]  # the docstring and the unchanged `2` are not taken
    c = _changed("def f(n):\n    return n > 3\n", "def f(n):\n    return n >= 30\n")
    assert seeded.literals(c) == [3, 30]


def test_values_of_the_arguments_own_type() -> None:
    assert seeded.values("--all", ["--", "-"]) == ["--", "--all--", "-", "--all-"]
    assert seeded.values(5, [3, "x"]) == [3, 2, 4]
    assert seeded.values(True, [3]) == []  # a bool is not a number here
    assert seeded.values(["a"], ["b"]) == []


def test_inputs_swap_one_argument_of_a_pickled_call_from_the_tests() -> None:
    c = _changed(FLAGS, FLAGS_HEAD)
    call = Call(
        c.key, "test_flags.py::test_long_option", (("text", "'--all'"),), {"kind": "return"}, pickled=("p",)
    )
    got = seeded.inputs([c], [call], lambda x: False, 24)
    assert got and all(i.seeded and i.pickled == ("p",) and i.origin == call.origin for i in got)
    assert [i.swap for i in got][:2] == [(("text", "'--'"),), (("text", "'--all--'"),)]
    assert len(got) <= seeded.MAX_PER_CALLABLE
    # a call from a skipped test (failing, or edited by the change) is not seeded
    assert seeded.inputs([c], [call], lambda x: True, 24) == []


def _review(repo: Path, tmp_path: Path, **extra) -> dict:
    extra.setdefault("behaviour", {}).setdefault("amplified_tests", 0)  # amplify.py reaches these too
    res = CliRunner().invoke(
        cli,
        ["review", "--repo", str(repo), "--config", str(_config(tmp_path, [], **extra)), "--format", "json"],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    jsonschema.validate(data, SCHEMA)
    return data


def _found(repo: Path, tmp_path: Path) -> list[dict]:
    """The review's behaviour findings (at least one)."""
    data = _review(repo, tmp_path)
    found = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert found, (data["notes"], data.get("skipped"))
    return found


@needs_bwrap
def test_a_literal_of_the_changed_line_reaches_the_branch_the_tests_missed(make_repo, tmp_path: Path) -> None:
    """`option("--all")` is "all" at both sides; given the changed line's own "-", base returned "-" and
    head returns "": a finding on the changed line with that call as its example. With seeding off
    (`behaviour.seeded_calls: 0`) the same change gets nothing from the behaviour stage."""
    found = _found(
        make_repo({"flags.py": FLAGS, "test_flags.py": FLAGS_TEST}, {"flags.py": FLAGS_HEAD}), tmp_path
    )
    assert found[0]["path"] == "flags.py" and found[0]["line"] == 3, found
    assert "option('-'): before '-'; after ''" in found[0]["evidence"], found[0]["evidence"]


@needs_bwrap
def test_with_seeding_off_the_same_change_shows_no_difference(make_repo, tmp_path: Path) -> None:
    repo = make_repo({"flags.py": FLAGS, "test_flags.py": FLAGS_TEST}, {"flags.py": FLAGS_HEAD})
    data = _review(repo, tmp_path, behaviour={"seeded_calls": 0})
    assert not [f for f in data["findings"] if f["source"] == "behaviour"], data["findings"]


def test_the_note_names_each_literal_once_and_how_many_calls_ran() -> None:
    c = _changed(FLAGS, FLAGS_HEAD)
    calls = [
        Call(c.key, f"test_flags.py::test_{n}", (("text", "'--all'"),), {"kind": "return"}, pickled=(n,))
        for n in ("a", "b")
    ]
    tried = seeded.inputs([c], calls, lambda x: False, 24)
    ran = [
        dataclasses.replace(x, replay=i, result={"kind": "return", "repr": "'x'"})
        for x, i in zip(calls, tried)
    ]
    (note,) = seeded.note([c], tried, ran, [])
    assert f"(2 of {len(tried)} ran: `text='--'`, `text='--all--'`, `text='-'`)" in note, note
    assert seeded.note([c], [], ran, []) == []  # nothing seeded, nothing said


MONEY = """class Money:
    def __init__(self, amount, currency):
        self.amount = amount
        self.currency = currency

    def show(self):
        if self.currency == "JPY":
            return f"{self.amount:.0f} {self.currency}"
        return f"{self.amount:.2f} {self.currency}"
"""
MONEY_HEAD = MONEY.replace('== "JPY"', '== "JYP"')
MONEY_TEST = """from money import Money


def test_show():
    assert Money(5, "EUR").show() == "5.00 EUR"
"""


def _method(base: str, head: str, name: str):
    from bot.evidence.behaviour import callables as cm

    tree, old = cm.parse(head), cm.parse(base)
    (d,) = [x for x in cm.definitions(tree) if x.qualname.endswith(name)]
    (b,) = [x for x in cm.definitions(old) if x.qualname.endswith(name)]
    return cm._record(
        "money.py", d, b, "modified", d.span[0], head.splitlines(), base.splitlines(), cm.module_docs(tree)
    )


def test_the_attributes_the_changed_lines_name_get_the_literals() -> None:
    c = _method(MONEY, MONEY_HEAD, "show")
    state = (("self", "Money(amount=5, currency='EUR')"),)
    call = Call(
        c.key,
        "test_money.py::test_show",
        (("self", "<Money>"),),
        {"kind": "return"},
        state=state,
        pickled=("p",),
    )
    # the changed line names `self.currency`; the other lines `self.amount` (a number: no int literal here)
    assert seeded.attributes(seeded.named(c), call) == [("self.currency", "EUR"), ("self.amount", 5)]
    got = seeded.inputs([c], [call], lambda x: False, 24)  # a method with no arguments but `self`
    assert [i.swap for i in got] == [
        (("self.currency", "'JPY'"),),
        (("self.currency", "'EURJPY'"),),
        (("self.currency", "'JYP'"),),
    ]
    assert all(i.seeded and i.shown[-1] == i.swap[0] for i in got)
    # a method the lines call, a public name the whole state does not show (a property), a constructor's
    # `self`: none is an attribute to set; a private one, or one past a state cut short, is tried
    c2 = dataclasses.replace(
        c,
        head_source=c.head_source + "        self.render()\n        self.label, self._cache\n",
        base_source=c.base_source + "        self.render()\n        self.label, self._cache\n",
    )
    assert [n for n, _ in seeded.attributes(seeded.named(c2), call)] == [
        "self.currency",
        "self.amount",
        "self._cache",
    ]
    cut = dataclasses.replace(call, state=(("self", "Money(amount=5, currency=<Cur…"),))
    assert seeded.attributes(seeded.named(c2), cut) == [
        ("self.currency", seeded.UNSHOWN),
        ("self.amount", 5),
        ("self.label", seeded.UNSHOWN),
        ("self._cache", seeded.UNSHOWN),
    ]
    assert seeded.attributes(seeded.named(dataclasses.replace(c, qualname="Money.__init__")), call) == []
    # not shown as an object (no state): no attribute to set
    assert seeded.inputs([c], [dataclasses.replace(call, state=())], lambda x: False, 24) == []


def test_attribute_values_by_what_the_tracer_showed() -> None:
    assert seeded.attribute_values(seeded.UNSHOWN, ["a", 1]) == ["a", 1]  # the harness checks the type
    assert seeded.attribute_values(seeded.OBJECT, ["a"]) == []
    assert seeded.attribute_values(True, [1]) == []
    assert seeded.attribute_values("abc...xyz", ["a", 1]) == ["a"]  # cut short: not appended to
    assert seeded.attribute_values(2, [3]) == [3, 4]


@needs_bwrap
def test_a_literal_set_on_self_reaches_the_branch_the_tests_missed(make_repo, tmp_path: Path) -> None:
    """`Money(5, "EUR").show()` is the same at both sides; with the changed line's own "JPY" set on
    `self.currency` (the object the test built), base printed no decimals and head prints two."""
    repo = make_repo({"money.py": MONEY, "test_money.py": MONEY_TEST}, {"money.py": MONEY_HEAD})
    found = _found(repo, tmp_path)
    assert found[0]["path"] == "money.py" and found[0]["line"] == 7, found
    assert "show() with self.currency='JPY': before '5 JPY'; after '5.00 JPY'" in found[0]["evidence"], found[
        0
    ]
    assert "a literal of the changed lines" in found[0]["message"], found[0]["message"]
    data = _review(repo, tmp_path, behaviour={"seeded_calls": 0})
    assert not [f for f in data["findings"] if f["source"] == "behaviour"], data["findings"]
