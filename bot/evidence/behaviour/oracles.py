"""The plain oracles of the behaviour rules (rules.py holds their rows): each takes the changed callable
and its differences (base against head on the same inputs) and returns the differences it fires on,
clearest first, or [] when it does not fire. The variants' oracles are in varied.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import pysyntax
from .callables import Changed
from .compare import Difference, clearest

# what the rules built on these oracles tell the reader (rules.py)
NESTING_WHY = (
    "The values are before the outer block, in it, in the inner block, back in the outer block and after "
    "both. Used inside itself, it no longer puts back the state it found: when the inner block ends, the "
    "outer block goes on with the state from before both (save the old value on entry and restore it "
    "on exit)."
)

LOST_CHECK_WHY = (
    "Before this change its own code rejected this input with an error; the change removed that check "
    "and it now returns a result for it."
)

PROGRAMMING_WHY = (
    "It now raises an error that is a bug whatever the input (a name read before it is bound, endless "
    "recursion) where it returned, or raised another error, before this change."
)


def new_failure(c: Changed, diffs: Sequence[Difference]) -> list[Difference]:
    """Head raises, hangs or crashes where base returned (two of those, then one other difference)."""
    failed = clearest([d for d in diffs if d.head_failed])
    return failed[:2] + clearest([d for d in diffs if not d.head_failed])[:1] if failed else []


# Exceptions that are a bug whatever the input (a new callable that raises them is broken, not strict).
ALWAYS_BUGS = ("NameError", "UnboundLocalError", "RecursionError", "SyntaxError", "ImportError")


def programming_error(c: Changed, diffs: Sequence[Difference]) -> list[Difference]:
    """Head raises an error that is a bug whatever the input (a name used before it is bound, endless
    recursion) where base returned or raised something else: an error path the change broke (base
    re-raised the input's FileNotFoundError; head's cleanup reads a variable the failed line never set)."""

    def one(d: Difference) -> bool:
        h, b = d.head, d.base
        if h.get("kind") != "raise" or h.get("type") not in ALWAYS_BUGS:
            return False
        return not (b.get("kind") == "raise" and b.get("type") == h.get("type"))

    return clearest([d for d in diffs if one(d)])


def restores(r: dict[str, Any]) -> bool:
    """A nesting result whose inner exit restores the outer block's state and outer exit the first."""
    states = r.get("states")
    if r.get("kind") != "return" or not isinstance(states, list) or len(states) != 5:
        return False
    return bool(states[3] == states[1] and states[4] == states[0])


def nesting_broken(c: Changed, diffs: Sequence[Difference]) -> list[Difference]:
    return [d for d in diffs if d.origin == "nesting" and restores(d.base) and not restores(d.head)]


def nesting_mended(c: Changed, diffs: Sequence[Difference]) -> list[Difference]:
    mended = [d for d in diffs if d.origin == "nesting" and restores(d.head) and not restores(d.base)]
    return mended if mended and len(mended) == len(diffs) else []


def holds(want: str | None, r: dict[str, Any]) -> bool:
    """Does a result print what a doctest example expects? Literals compare as values (quote style, line
    wrapping): `["a"]` holds for `['a']`."""
    want = (want or "").strip()
    if r.get("kind") == "return":
        got = str(r.get("repr"))
        if got.strip() == want or (got == "None" and want == ""):
            return True
        try:
            return bool(pysyntax.literal_eval(got) == pysyntax.literal_eval(want))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return False
    if r.get("kind") == "raise":
        return want.startswith("Traceback") and str(r.get("type")) in want
    return False


def example_broken(c: Changed, diffs: Sequence[Difference]) -> list[Difference]:
    return [d for d in diffs if d.want is not None and holds(d.want, d.base) and not holds(d.want, d.head)]


def example_holds(c: Changed, diffs: Sequence[Difference]) -> list[Difference]:
    fixed = [d for d in diffs if d.want is not None and holds(d.want, d.head) and not holds(d.want, d.base)]
    return clearest(diffs) if fixed else []


def speaks_of_none(c: Changed) -> bool:
    return "None" in c.docstring or " none" in c.docstring.lower()


def lost_result(c: Changed, diffs: Sequence[Difference]) -> list[Difference]:
    """Base returned a value and head returns None, changing no argument instead (not an in-place API)."""

    def one(d: Difference) -> bool:
        if d.base.get("kind") != "return" or d.head.get("kind") != "return" or d.head.get("repr") != "None":
            return False
        return d.base.get("repr") != "None" and " and changes " not in d.after and not speaks_of_none(c)

    return clearest([d for d in diffs if one(d)])


def lost_message(c: Changed, diffs: Sequence[Difference]) -> list[Difference]:
    """The same exception type raised (or built and returned) on both sides, with a message at base and an
    empty one at head: `str(error)` says nothing now."""

    def one(d: Difference) -> bool:
        b, h = d.base, d.head
        if b.get("kind") != h.get("kind") or b.get("kind") not in ("return", "raise"):
            return False
        if b.get("kind") == "raise" and b.get("type") != h.get("type"):
            return False
        if "message" not in b or "message" not in h:  # a returned value that is not an exception
            return False
        return bool(str(b.get("message") or "").strip()) and not str(h.get("message") or "").strip()

    return clearest([d for d in diffs if one(d)])


def gained_result(c: Changed, diffs: Sequence[Difference]) -> list[Difference]:
    """Each difference: base returned None (changing nothing) and head returns a value, and the docstring
    never speaks of None: the new code completes what the old one left undone."""

    def one(d: Difference) -> bool:
        if d.base.get("kind") != "return" or d.base.get("repr") != "None" or d.head.get("kind") != "return":
            return False
        return d.head.get("repr") != "None" and not speaks_of_none(c)

    gained = [d for d in diffs if one(d)]
    return clearest(gained) if gained and len(gained) == len(diffs) else []
