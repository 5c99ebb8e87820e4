"""The tests' own calls made again with a value another of their calls gave the same parameter.

Where the tests reach a changed callable and every call behaves the same at base and head, each test
often tried one value of each parameter, and the changed branch waits on a combination none of them
made: one test passes a schema instance, another passes `only=('a',)`, none passes both. So for each
parameter of a call the tests made, the other literal values the tests' calls gave that parameter (or
held in the same attribute of `self` or of an object argument that the callable's lines name) are tried
in its place, one parameter at a time, the rest of the call as the tests built it (the tracer's pickle;
steer.py's `swap`). A combination that one of the tests' calls already made is not made again. The call
is made at base and head and a difference is judged as the seeded ones are (rules.py kind "steered",
then the change's words).

Values come only from the tests' calls that are not varied, replayed, failing at head or edited by the
change (`skip`): a deleted regression test's arguments are not spread over the others. An attribute may
get a value of another type (None where the tests' other objects held a tuple): a state the tests' own
objects were in. The harness sets it only where the object holds it as an instance attribute, running no
project code (prereview_steer.py `set_attribute`, `loose`).

Origin: a general idea, recombining the inputs a suite already uses (pairwise/combinatorial testing,
the crossover of search-based test generation such as EvoSuite), narrowed to the changed callable; not a
corpus case.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ... import pysyntax
from . import seeded
from .callables import Changed
from .compare import Call
from .generate import Input
from .seeded import OBJECT, UNSHOWN, attributes, named, spread
from .steer import MAX_SHOWN, candidates

MAX_PER_CALLABLE = 6  # inputs per changed callable
MAX_PER_PARAM = 3  # values tried per parameter of one call
MAX_POOL = 12  # distinct values kept per parameter
PREFIX = "crossed "  # Call.variant of such a call (compare.AIMED)


def _literal(shown: str) -> Any:
    """The value a repr from the tracer spells, or OBJECT (an object, or a value the tracer cut short)."""
    if "…" in shown or "..." in shown:
        return OBJECT
    try:
        return pysyntax.literal_eval(shown)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return OBJECT


def pool(calls: Sequence[Call], names: Sequence[tuple[str, str]]) -> dict[str, list[tuple[str, Any]]]:
    """Per parameter (`name`) and named attribute (`self.sep`), the distinct literal values the `calls`
    gave it, in the order first seen: (repr, value)."""
    out: dict[str, list[tuple[str, Any]]] = {}

    def add(name: str, value: Any) -> None:
        if value is OBJECT or value is UNSHOWN:
            return
        text = repr(value)
        got = out.setdefault(name, [])
        if len(got) < MAX_POOL and all(t != text for t, _ in got):
            got.append((text, value))

    for call in calls:
        for name, shown in call.args:
            if name not in ("self", "cls") and "." not in name:
                add(name, _literal(shown))
        for name, held in attributes(names, call):
            add(name, held)
    return out


def _ordered(was: str, held: Any, values: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The pool's values other than the one the call had: those of another type first (an object where
    the call had None, None where it had a string: another kind of input), then the rest."""
    other = [(t, v) for t, v in values if t != was]
    return [x for x in other if type(x[1]) is not type(held)] + [x for x in other if type(x[1]) is type(held)]


def inputs(
    quiet: Sequence[Changed], base_calls: Sequence[Call], skip: Callable[[Call], bool], most: int
) -> list[Input]:
    """At most `most` crossed calls for the changed callables whose tests' calls showed no difference
    (`quiet`)."""
    if most <= 0:
        return []
    own: dict[str, list[Call]] = {}
    for x in base_calls:
        if not x.variant and x.replay is None and not skip(x):
            own.setdefault(x.callable, []).append(x)
    out: list[Input] = []
    for c, _ in candidates(quiet, base_calls, skip, arguments=False):
        names, theirs = named(c), own.get(c.key, [])
        values = pool(theirs, names)
        made = {(x.args, x.state) for x in theirs}
        mine: list[Input] = []
        for call in diverse(theirs, names):
            for name, shown in call.args:
                if name in ("self", "cls") or "." in name or len(values.get(name, ())) < 2:
                    continue
                for text, _ in _ordered(shown, _literal(shown), values[name])[:MAX_PER_PARAM]:
                    given = tuple((k, text if k == name else v) for k, v in call.args)
                    if (given, call.state) in made:
                        continue  # a call the tests made themselves: compared already
                    mine.append(_input(c, call, given, ((name, text),)))
            for name, held in attributes(names, call):
                shown = "" if held in (OBJECT, UNSHOWN) else repr(held)
                for text, _ in _ordered(shown, held, values.get(name, []))[:MAX_PER_PARAM]:
                    swap = ((name, text),)
                    mine.append(_input(c, call, call.args + swap, swap))
        rank = {n: k for k, n in enumerate(dict.fromkeys(i.swap[0][0] for i in mine))}
        mine.sort(key=lambda i: rank[i.swap[0][0]])  # a parameter on each call before the next parameter
        out += spread(mine)[:MAX_PER_CALLABLE]
        if len(out) >= most:
            break
    return out[:most]


def kinds(call: Call, names: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
    """What kind of value each argument of `call` and each named attribute of its objects held: a
    literal's type, a class, or another object (`('self.nested', 'class')`)."""
    out = {(n, _kind(shown)) for n, shown in call.args if n not in ("self", "cls")}
    fields = {obj: seeded.shown_fields(state)[0] for obj, state in call.state}
    return out | {(f"{o}.{a}", _kind(fields[o][a])) for o, a in names if a in fields.get(o, {})}


def _kind(shown: str) -> str:
    value = _literal(shown)
    if value is not OBJECT:
        return type(value).__name__
    return "class" if shown.startswith("<class ") else "object"


def diverse(calls: Sequence[Call], names: Sequence[tuple[str, str]]) -> list[Call]:
    """Up to steer.MAX_SHOWN of the tests' calls that can be made again (pickled, distinct inputs), chosen
    to cover the most kinds of value (`kinds`) between them: each next call the one that adds the most
    kinds not covered yet, in the tests' order on a tie. The first calls the tests made are often alike
    (one fixture's objects), and a changed branch waits on another kind of input (an instance where
    those held a class): partition testing's one input per class, not the first three."""
    pending: dict[tuple[object, ...], tuple[Call, set[tuple[str, str]]]] = {}
    for x in calls:
        if x.pickled:
            pending.setdefault((x.args, x.state), (x, kinds(x, names)))
    chosen: list[Call] = []
    covered: set[tuple[str, str]] = set()
    while pending and len(chosen) < MAX_SHOWN:
        key = max(pending, key=lambda k: len(pending[k][1] - covered))  # the first on a tie
        call, got = pending.pop(key)
        chosen.append(call)
        covered |= got
    return chosen


def with_seeded(
    quiet: Sequence[Changed], base_calls: Sequence[Call], skip: Callable[[Call], bool], most: int
) -> list[Input]:
    """The seeded calls (seeded.py: the changed lines' literals), then the crossed ones, `most` of each."""
    return seeded.inputs(quiet, base_calls, skip, most) + inputs(quiet, base_calls, skip, most)


def _input(
    c: Changed, call: Call, given: tuple[tuple[str, str], ...], swap: tuple[tuple[str, str], ...]
) -> Input:
    return Input(c.key, call.origin, pickled=call.pickled, shown=given, swap=swap, seeded=True, crossed=True)


def note(
    targets: Sequence[Changed], inputs: Sequence[Input], calls: Sequence[Call], diffs: Sequence[Any]
) -> list[str]:
    """One note per crossed callable that showed no difference: which values its calls were given."""
    crossed = [i for i in inputs if i.crossed]
    given = "given values their other calls gave the same parameter"
    return seeded.quiet_notes(targets, crossed, calls, diffs, PREFIX, given)
