"""Base calls made again at head: a call base's tests made that head's tests did not make with the same
inputs (its test is gone or edited, or head built `self` differently) is given to head's code too, with
the arguments, `self` included, the tracer pickled at base (prereview_trace.py `replays`; the harness
unpickles them inside the sandbox, prereview_harness.py `pickled`; the host never reads them)."""

from __future__ import annotations

from ... import pysyntax
from .callables import Changed
from .compare import Call, Difference
from .generate import Input
from .judge import Example

REPLAYS_PER_CALLABLE = 8  # the tracer pickles the first 8 distinct inputs of each callable
MAX_REPLAYS = 40


def inputs(unmatched: list[Call], targets: list[Changed], failing: set[str]) -> list[Input]:
    """Inputs that make base's recorded calls again (their pickled arguments) on both sides: calls of a
    callable that exists at base, not from a test that fails at head (that is the tests stage's
    evidence), at most REPLAYS_PER_CALLABLE distinct ones per callable and MAX_REPLAYS in all."""
    existing = {c.key for c in targets if c.kind != "added"}
    out: dict[tuple[str, tuple[str, ...]], Input] = {}
    per: dict[str, int] = {}
    for c in unmatched:
        key = (c.callable, c.pickled)
        if not c.pickled or c.variant or c.callable not in existing or c.origin in failing or key in out:
            continue
        if per.get(c.callable, 0) >= REPLAYS_PER_CALLABLE or len(out) >= MAX_REPLAYS:
            continue
        per[c.callable] = per.get(c.callable, 0) + 1
        out[key] = Input(c.callable, c.origin, pickled=c.pickled, shown=c.args)
    return list(out.values())


def lacks_new_attribute(d: Difference) -> bool:
    """A replayed call that raises AttributeError at head only: base's pickled object lacks what head's
    constructor sets now, which says nothing about the change's behaviour."""
    return bool(
        d.replay is not None
        and d.replay.pickled
        and d.head.get("kind") == "raise"
        and d.head.get("type") == "AttributeError"
        and d.base.get("kind") != "raise"
    )


def replayed(replays: list[Input], calls: list[Call]) -> set[str]:
    """The callables whose replayed calls ran (gave a result, not "unavailable")."""
    ran = {x.callable for x in calls if x.result.get("kind") != "unavailable"}
    return {i.callable for i in replays} & ran


def note(targets: list[Changed], replayed: set[str]) -> list[str]:
    """The note naming the callables compared on replayed calls (none when there are none)."""
    if not replayed:
        return []
    return [
        "behaviour: "
        + ", ".join(f"`{c.qualname}`" for c in targets if c.key in replayed)
        + " called at head with the arguments (and `self`) its base run's tests gave it "
        "where head's tests made no such call"
    ]


def edited_note(dropped: int, redo: list[Call], again: list[Input]) -> list[str]:
    """The note on the differences seen only in tests the change edits (none when there are none): how
    many of their base calls are made again at both sides, or that none could be."""
    if not dropped:
        return []
    n = len({(c.callable, c.pickled) for c in redo} & {(i.callable, i.pickled) for i in again})
    how = (
        f"; {n} of their base call(s) made again at both sides on the recorded arguments"
        if n
        else " (none of their calls' arguments was recorded to make them again)"
    )
    return [
        f"behaviour: {dropped} difference(s) seen only in tests the change edits were not compared as "
        f"those tests ran{how}"
    ]


def replayable(e: Example) -> bool:
    """Inputs that are plain literals of a plain function (not a method's `self`)."""
    if not e.args and e.origin == "doctest":
        return False
    for name, text in e.args:
        if name in ("self", "cls") or not (name.isdigit() or name.isidentifier()):
            return False
        try:
            pysyntax.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return False
    return True


def as_input(e: Example) -> Input:
    if all(n.isdigit() for n, _ in e.args):
        return Input(e.callable, e.origin, args=tuple(r for _, r in e.args))
    return Input(e.callable, e.origin, kwargs=e.args)
