"""The varied arguments the tracer (prereview_trace.py) gives a test's call again: the argument wrapped
in a forwarding proxy, a str or bytes with a line break at its end, values at an edge of its type.

Runs INSIDE the sandbox, in the project's interpreter; imports nothing from `bot`.
"""

from __future__ import annotations

from typing import Any

import prereview_probe as probe

MAX_YIELDS = 100


class Yielded(list):  # type: ignore[type-arg]
    """A generator's first items, shown as what it yields (not as the list it is not)."""

    def __repr__(self) -> str:
        return "yields " + list.__repr__(self) + (" ..." if len(self) >= MAX_YIELDS else "")


def drained(value: Any) -> Any:
    """A generator's first MAX_YIELDS items (an exception raised while iterating propagates); any other
    value as it is. Only in a variant's forked child: the test's own generator is the test's to use."""
    if type(value).__name__ != "generator" or not hasattr(value, "gi_frame"):
        return value
    out = Yielded()
    for item in value:
        out.append(item)
        if len(out) >= MAX_YIELDS:
            break
    return out


class Proxy:
    """Forwards every attribute to its target, as `__getattr__`-based wrappers do; no special methods."""

    __slots__ = ("_prereview_target",)

    def __init__(self, target: Any) -> None:
        object.__setattr__(self, "_prereview_target", target)

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_prereview_target"), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(object.__getattribute__(self, "_prereview_target"), name, value)

    def __delattr__(self, name: str) -> None:
        delattr(object.__getattribute__(self, "_prereview_target"), name)

    def __repr__(self) -> str:
        return f"Proxy({probe.safe_repr(object.__getattribute__(self, '_prereview_target'))})"


_PLAIN = (type(None), bool, int, float, complex, str, bytes, bytearray, type, range, slice)


def wrap(value: Any, depth: int = 0) -> Any:
    """`value` with its objects wrapped in a Proxy (inside plain dicts, lists and tuples too, two levels
    deep); None when it holds no object to wrap (literals, classes, functions and modules are not)."""
    kind = type(value)
    if kind in (dict, list, tuple) and depth < 2:
        items = list(value.items()) if kind is dict else list(enumerate(value))
        changed = False
        out = []
        for k, v in items[:50]:
            w = wrap(v, depth + 1)
            changed = changed or w is not None
            out.append((k, v if w is None else w))
        if not changed:
            return None
        out += items[50:]
        if kind is dict:
            return dict(out)
        return kind(v for _, v in out)
    if isinstance(value, _PLAIN) or kind in (dict, list, tuple, set, frozenset):
        return None
    if hasattr(value, "__code__") or kind.__name__ in ("module", "builtin_function_or_method"):
        return None  # functions and methods: called, not read
    return Proxy(value)


def line_broken(value: Any) -> Any:
    """A non-empty str or bytes argument with a line break added at its end (None for other values):
    `$` in a regex matches before a final newline, so a check written with it lets the break through."""
    if type(value) is str and value and not value.endswith("\n"):
        return value + "\n"
    if type(value) is bytes and value and not value.endswith(b"\n"):
        return value + b"\n"
    return None


def _one(value: Any) -> list[Any] | None:
    return None if value is None else [value]


def _number(text: str) -> float | None:
    """The finite number a str spells ("10.5", " -3 "), else None."""
    try:
        got = float(text)
    except ValueError:
        return None
    return got if got - got == 0 else None  # not inf, not nan


def edges(value: Any) -> list[Any] | None:
    """Values at an edge of `value`'s own (exact, built-in) type, none equal to it (None when there are
    none): empty for a sized value and the first item alone for a longer list or tuple; 0 and the negated
    number for an int or float (bool is not a number here); a str that spells a finite number is a
    number too: negated (or "-1" for zero) and "inf" (a parser that checked for non-finite values; from
    the tuning case dateutil _to_decimal, one project so far)."""
    kind = type(value)
    out: list[Any] = []
    if kind in (str, bytes, list, tuple, dict, set, frozenset) and len(value):
        out.append(kind())
        if kind in (list, tuple) and len(value) > 1:
            out.append(kind(value[:1]))
        number = _number(value) if kind is str else None
        if number is not None:
            text = value.strip()
            out += ["-1" if number == 0 else text[1:] if text.startswith("-") else "-" + text, "inf"]
    elif kind in (int, float) and value == value:  # not NaN
        out.extend([kind(0), -value] if value > 0 else [kind(0)] if value else [kind(-1)])
    return out or None


def cased(value: Any) -> list[Any] | None:
    """A str or bytes argument in lower and in upper case, those that differ from it (None for other
    values, or when no letter changes): keywords, header and host names, schemes and hex digits are read
    the same in either case, and code that compares them exactly stops doing so."""
    if type(value) not in (str, bytes) or not value:
        return None
    out = [v for v in (value.lower(), value.upper()) if v != value]
    return out or None


# (label, the values an argument is varied to, None when none): the tracer's kinds of variant, in order
KINDS = (
    ("wrapped", lambda v: _one(wrap(v))),
    ("line break", lambda v: _one(line_broken(v))),
    ("edge", edges),
)

# the kinds a test's outer call (prereview_outer.py) is varied by: its arguments are plain data
OUTER_KINDS = (
    ("case", cased),
    ("line break", lambda v: _one(line_broken(v))),
    ("edge", edges),
)
