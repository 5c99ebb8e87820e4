"""The tests' own calls made again with a value another of their calls gave the same parameter
(bot/evidence/behaviour/crossed.py).

Origin: a general idea (recombining a suite's own inputs: pairwise testing, the crossover of search-based
test generation), not a corpus case. Here each test sets one of two options; the changed line breaks only
their combination, and no literal on it names a value to try."""

from __future__ import annotations

from pathlib import Path

from bot.evidence.behaviour import crossed, prereview_probe, seeded
from bot.evidence.behaviour.compare import Call

from .test_behaviour_seeded import _changed as seeded_changed
from .test_behaviour_seeded import _review, needs_bwrap

JOIN = '''DEFAULT = ","


def join(parts, sep=DEFAULT, strip=False):
    """The parts joined by `sep`, each stripped of spaces first when `strip`."""
    if strip:
        parts = [p.strip() for p in parts]
    return sep.join(parts)
'''
# strips only with the default separator (spaces or a line break around it aside) or none
JOIN_HEAD = JOIN.replace("    if strip:\n", "    if strip and (sep.strip() == DEFAULT or not sep):\n")
JOIN_TEST = """from join import join


def test_sep():
    assert join(["a", "b"], sep=";") == "a;b"


def test_strip():
    assert join([" a ", "b "], strip=True) == "a,b"
"""


def _changed(base: str, head: str):
    return seeded_changed(base, head, "join.py")


def _calls(key: str) -> list[Call]:
    args = (("parts", "['a', 'b']"), ("sep", "';'"), ("strip", "False"))
    args2 = (("parts", "[' a ', 'b ']"), ("sep", "','"), ("strip", "True"))
    return [
        Call(key, "test_join.py::test_sep", args, {"kind": "return"}, pickled=("p1",)),
        Call(key, "test_join.py::test_strip", args2, {"kind": "return"}, pickled=("p2",)),
    ]


def test_pool_holds_each_parameters_literal_values_once() -> None:
    c = _changed(JOIN, JOIN_HEAD)
    calls = _calls(c.key)
    cut = Call(c.key, "t::u", (("parts", "['a', 'b', …"), ("sep", "';'")), {"kind": "return"})
    got = crossed.pool([*calls, cut], seeded.named(c))
    assert got == {
        "parts": [("['a', 'b']", ["a", "b"]), ("[' a ', 'b ']", [" a ", "b "])],  # the cut one is left out
        "sep": [("';'", ";"), ("','", ",")],
        "strip": [("False", False), ("True", True)],
    }


def test_each_call_gets_the_other_calls_values_one_parameter_at_a_time() -> None:
    c = _changed(JOIN, JOIN_HEAD)
    calls = _calls(c.key)
    got = crossed.inputs([c], calls, lambda x: False, 24)
    assert got and all(i.seeded and i.crossed for i in got)
    swaps = {(i.origin.rsplit("::", 1)[-1], i.swap) for i in got}
    assert ("test_strip", (("sep", "';'"),)) in swaps
    assert ("test_sep", (("strip", "True"),)) in swaps
    assert len(got) <= crossed.MAX_PER_CALLABLE
    # each swap changes one argument of one recorded call, the rest as the tests gave it
    for i in got:
        ((name, text),) = i.swap
        call = next(x for x in calls if x.pickled == i.pickled)
        assert dict(i.shown)[name] == text != dict(call.args)[name]
        assert {k: v for k, v in i.shown if k != name} == {k: v for k, v in call.args if k != name}
    # a combination one of the tests already made is not made again
    same = [
        calls[0],
        Call(
            c.key,
            "t::v",
            (("parts", "['a', 'b']"), ("sep", "','"), ("strip", "False")),
            {"kind": "return"},
            pickled=("p3",),
        ),
    ]
    assert not [
        i
        for i in crossed.inputs([c], same, lambda x: False, 24)
        if i.swap == (("sep", "','"),) and i.pickled == ("p1",)
    ]
    # values of a skipped test's calls (failing, or edited by the change) are not spread to the others
    skip = lambda x: x.origin.endswith("test_strip")  # noqa: E731
    assert crossed.inputs([c], calls, skip, 24) == []
    assert crossed.inputs([c], calls, lambda x: False, 0) == []


SHOP = '''class Cart:
    def __init__(self, items, only=None):
        self.items, self.only = items, only

    def names(self):
        """The items' names, only those in `only` when it is set."""
        if self.only is not None:
            return sorted(set(self.items) & set(self.only))
        return sorted(self.items)
'''


def test_an_attribute_gets_the_values_other_calls_objects_held_of_any_type() -> None:
    """One test's cart has `only=None`, another's `only=('a',)`: each call's `self.only` gets the other's
    value, None included (the harness sets it loosely, as a state the tests' own objects were in)."""
    from bot.evidence.behaviour import callables as cm

    head = SHOP.replace("set(self.items) & set(self.only)", "set(self.only)")
    tree, old = cm.parse(head), cm.parse(SHOP)
    (d,) = [x for x in cm.definitions(tree) if x.qualname == "Cart.names"]
    (b,) = [x for x in cm.definitions(old) if x.qualname == "Cart.names"]
    c = cm._record(
        "shop.py", d, b, "modified", d.span[0], head.splitlines(), SHOP.splitlines(), cm.module_docs(tree)
    )
    calls = [
        Call(
            c.key,
            "t.py::test_all",
            (("self", "<Cart>"),),
            {"kind": "return"},
            state=(("self", "Cart(items=['a', 'b'], only=None)"),),
            pickled=("p1",),
        ),
        Call(
            c.key,
            "t.py::test_only",
            (("self", "<Cart>"),),
            {"kind": "return"},
            state=(("self", "Cart(items=['a'], only=('a',))"),),
            pickled=("p2",),
        ),
    ]
    got = {(i.pickled, i.swap) for i in crossed.inputs([c], calls, lambda x: False, 24)}
    assert (("p1",), (("self.only", "('a',)"),)) in got
    assert (("p2",), (("self.only", "None"),)) in got
    assert all(i.crossed for i in crossed.inputs([c], calls, lambda x: False, 24))


def test_the_calls_crossed_cover_the_most_kinds_of_value_not_the_first_ones() -> None:
    """Four carts of the same kind, then one whose `only` is an object: that one is among the three calls
    crossed (each next call the one that adds most kinds of value not covered yet), and each parameter
    is tried on every chosen call before the next parameter."""
    c = _changed(JOIN, JOIN_HEAD)
    names = [("self", "only"), ("self", "items")]

    def cart(i: int, only: str, items: str = "['a']") -> Call:
        state = (("self", f"Cart(items={items}, only={only})"),)
        return Call(
            c.key,
            f"t.py::test_{i}",
            (("self", "<Cart>"),),
            {"kind": "return"},
            state=state,
            pickled=(f"p{i}",),
        )

    calls = [cart(0, "None"), cart(1, "None", "['b']"), cart(2, "('a',)"), cart(3, "None", "['c']")]
    calls.append(cart(4, "<Only(keep=['a'])>"))
    assert crossed.kinds(calls[4], names) == {("self.only", "object"), ("self.items", "list")}
    got = [x.origin for x in crossed.diverse(calls, names)]
    assert got == ["t.py::test_0", "t.py::test_2", "t.py::test_4"], got
    # with five calls of one kind, the tests' order
    same = [cart(i, "None", f"['{i}']") for i in range(5)]
    assert [x.origin for x in crossed.diverse(same, names)] == [
        "t.py::test_0",
        "t.py::test_1",
        "t.py::test_2",
    ]


def test_each_parameter_is_tried_on_every_chosen_call_before_the_next() -> None:
    c = _changed(JOIN, JOIN_HEAD)
    calls = [
        *_calls(c.key),
        Call(
            c.key,
            "test_join.py::test_both",
            (("parts", "['x']"), ("sep", "'-'"), ("strip", "True")),
            {"kind": "return"},
            pickled=("p3",),
        ),
    ]
    got = [
        (i.origin.rsplit("::", 1)[1], i.swap[0][0]) for i in crossed.inputs([c], calls, lambda x: False, 24)
    ]
    firsts = list(dict.fromkeys(p for _, p in got))
    assert got[: len(calls)] == [(x.origin.rsplit("::", 1)[1], firsts[0]) for x in calls], got


@needs_bwrap
def test_a_combination_no_test_made_reaches_the_changed_branch(make_repo, tmp_path: Path) -> None:
    """Each test is the same at base and head; `test_strip`'s call given `test_sep`'s `sep=';'` stripped
    the parts before and does not now: a finding on the changed line with that call as its example. With
    `behaviour.seeded_calls: 0` the same change gets nothing from the behaviour stage."""
    repo = make_repo({"join.py": JOIN, "test_join.py": JOIN_TEST}, {"join.py": JOIN_HEAD})
    data = _review(repo, tmp_path)
    found = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert found, (data["notes"], data.get("skipped"))
    assert found[0]["path"] == "join.py" and found[0]["line"] == 6, found
    assert "before 'a;b'; after ' a ;b '" in found[0]["evidence"], found[0]["evidence"]
    assert "another of the tests' calls gave it" in found[0]["message"], found[0]["message"]
    data = _review(repo, tmp_path, behaviour={"seeded_calls": 0})
    assert not [f for f in data["findings"] if f["source"] == "behaviour"], data["findings"]


@needs_bwrap
def test_a_difference_only_a_varied_call_shows_leaves_the_callable_to_the_aimed_calls(
    make_repo, tmp_path: Path
) -> None:
    """Head strips only with the default separator. The tracer's variants of `test_strip`'s call (`sep=''`,
    `sep=',\\n'`) differ too, but those differences are for the variants' rules alone, and none takes them:
    the callable still counts as quiet, so the crossed call (`sep=';'`) is made and reported."""
    head = JOIN.replace("    if strip:\n", "    if strip and sep == DEFAULT:\n")
    repo = make_repo({"join.py": JOIN, "test_join.py": JOIN_TEST}, {"join.py": head})
    data = _review(repo, tmp_path)
    found = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert found and "before 'a;b'; after ' a ;b '" in found[0]["evidence"], (data["findings"], data["notes"])
    # without the aimed calls, the varied call's difference is still said, in a note, not dropped silently
    data = _review(repo, tmp_path, behaviour={"seeded_calls": 0})
    assert not [f for f in data["findings"] if f["source"] == "behaviour"], data["findings"]
    (note,) = [n for n in data["notes"] if "which no rule takes as a bug" in n]
    assert note.startswith("behaviour: `join`: ") and "`edge sep`" in note and "(e.g. join([' a '" in note, (
        note
    )


# a cart with more public fields than the tracer shows (prereview_probe.MAX_FIELDS): by name, `only` comes
# after the twelve labels; head drops the intersection with the cart's items (a frozenset: no literal, so
# the tests' other carts' items are not crossed)
WIDE = SHOP.replace(
    "        self.items, self.only = items, only\n",
    "        self.items, self.only = items, only\n"
    '        self.__dict__.update({f"label{i:02}": "" for i in range(12)})\n',
)
WIDE_HEAD = WIDE.replace("set(self.items) & set(self.only)", "set(self.only)")
WIDE_TEST = """from shop import Cart


def test_all():
    assert Cart(frozenset("c")).names() == ["c"]


def test_only():
    assert Cart(frozenset("ab"), only=("a",)).names() == ["a"]
"""


@needs_bwrap
def test_an_attribute_the_method_reads_is_shown_and_crossed_past_the_tracers_field_cap(
    make_repo, tmp_path: Path
) -> None:
    """The tracer shows an object's fields by name up to a cap; those the changed method's lines name come
    first, so `self.only` is seen on both tests' carts and `test_all`'s cart is given `only=('a',)`: base
    returned [] and head returns ['a']."""
    assert "only=" not in prereview_probe.state_repr(_load(WIDE).Cart(frozenset("c")))  # past the cap by name
    repo = make_repo({"shop.py": WIDE, "test_shop.py": WIDE_TEST}, {"shop.py": WIDE_HEAD})
    data = _review(repo, tmp_path)
    found = [f for f in data["findings"] if f["source"] == "behaviour"]
    assert found and found[0]["path"] == "shop.py", (data["findings"], data["notes"])
    assert "before []; after ['a']" in found[0]["evidence"], found[0]["evidence"]


def _load(source: str):
    import types

    mod = types.ModuleType("shop")
    exec(source, mod.__dict__)  # noqa: S102 (the test's own fixture)
    return mod


def test_the_note_names_the_values_tried_and_how_many_calls_ran() -> None:
    c = _changed(JOIN, JOIN_HEAD)
    got = crossed.inputs([c], _calls(c.key), lambda x: False, 24)
    ran = [
        Call(c.key, i.origin, i.shown, {"kind": "return", "repr": "'x'"}, replay=i, variant="crossed x")
        for i in got[:2]
    ]
    (note,) = crossed.note([c], got, ran, [])
    assert note.startswith("behaviour: `join`: no difference on the tests' calls given values their other")
    assert f"(2 of {len(got)} ran: `" in note, note
    # a callable whose crossed calls differed gets no such note; nor does one never crossed
    differing = [type("D", (), {"callable": c.key, "variant": "crossed sep"})()]
    assert crossed.note([c], got, ran, differing) == []
    assert crossed.note([c], [], [], []) == []
