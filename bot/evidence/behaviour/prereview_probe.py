"""Bounded, normalised reprs shared by the tracer plugin and the call harness.

This file runs INSIDE the sandbox, in the reviewed project's interpreter: it imports nothing from `bot`
(only the standard library), so it is copied next to the plugin and the harness in the scratch tree.
"""

from __future__ import annotations

import os
import re
import reprlib
from collections.abc import Collection

_ADDR = re.compile(r"0x[0-9a-fA-F]{4,}")
_TMP = re.compile(r"(?:/private)?/(?:tmp|var/folders)/[^\s'\"<>,)\]]*")


MAX_FIELDS = 12
MAX_NEST = 2
MAX_VALUES = 300


class _Repr(reprlib.Repr):
    """reprlib, plus the public fields of objects whose class keeps `object.__repr__`: `<Serializer object at
    0x…>` says nothing a comparison can use, `Serializer(salt='s', secret_keys=['b', 'a'])` does. With
    `own_containers`, an object with a `__repr__` of its own is that repr followed by its public fields that
    hold lists, tuples, dicts or sets, `<Statement 'select…'>{tokens=[…]}` (prereview_outer.py: a parse
    tree's nodes show their text; how the text was grouped is in their children)."""

    nest = 0  # objects being shown inside objects (bounded: an object graph can be large or cyclic)
    budget = 0  # values one repr may still show
    max_nest = MAX_NEST
    max_values = MAX_VALUES
    own_containers = False

    def repr(self, x: object) -> str:
        self.budget, self.nest = self.max_values, 0
        return super().repr(x)

    def repr1(self, x: object, level: int) -> str:
        if self.budget <= 0:
            return "…"
        self.budget -= 1
        return super().repr1(x, level)

    def repr_instance(self, x: object, level: int) -> str:
        own = type(x).__repr__ is not object.__repr__
        if own and (not self.own_containers or type(x).__module__ == "builtins"):
            return super().repr_instance(x, level)
        fields = _fields(x)
        if own:
            fields = [(k, v) for k, v in fields if type(v) in (list, tuple, dict, set, frozenset)]
        if not fields:
            return super().repr_instance(x, level)
        head, (start, end) = (super().repr_instance(x, level), "{}") if own else (type(x).__qualname__, "()")
        if level <= 0 or self.nest >= self.max_nest:
            return f"{head}{start}...{end}"
        self.nest += 1
        try:
            shown = ", ".join(f"{k}={self.repr1(v, level - 1)}" for k, v in fields[:MAX_FIELDS])
        finally:
            self.nest -= 1
        return f"{head}{start}{shown}{', ...' if len(fields) > MAX_FIELDS else ''}{end}"


def _fields(x: object) -> list[tuple[str, object]]:
    """Public instance attributes (`__dict__`, then `__slots__`), sorted by name; [] when unreadable."""
    out: dict[str, object] = {}
    try:
        d = object.__getattribute__(x, "__dict__")
        if isinstance(d, dict):
            out.update((k, v) for k, v in d.items() if isinstance(k, str) and not k.startswith("_"))
    except Exception:  # noqa: BLE001, S110 (no __dict__, or a hostile __getattribute__)
        pass
    try:
        for klass in type(x).__mro__:
            slots = klass.__dict__.get("__slots__", ())
            for k in (slots,) if isinstance(slots, str) else slots:
                if isinstance(k, str) and not k.startswith("_") and k not in out:
                    try:
                        out[k] = object.__getattribute__(x, k)
                    except Exception:  # noqa: BLE001, S112 (an unset slot)
                        continue
    except Exception:  # noqa: BLE001, S110 (a class whose __mro__ or __slots__ misbehaves)
        pass
    return sorted(out.items())


_R = _Repr()
_R.maxlist = _R.maxtuple = _R.maxset = _R.maxfrozenset = _R.maxdeque = _R.maxarray = 40
_R.maxdict = 20
_R.maxstring = 300
_R.maxother = 300
_R.maxlevel = 6


def normalise(text: str, root: str = "", limit: int = 400) -> str:
    """Addresses and scratch/temp paths replaced, so base and head (different trees) compare equal."""
    if root:
        text = text.replace(root.rstrip("/") + "/", "").replace(root.rstrip("/"), "<root>")
    text = _ADDR.sub("0x…", text)
    text = _TMP.sub("<tmp>", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def safe_repr(value: object, root: str = "", limit: int = 400) -> str:
    try:
        text = _R.repr(value)
    except Exception as exc:  # noqa: BLE001 (a broken __repr__ must not break the run)
        text = f"<unrepresentable {type(value).__name__}: {type(exc).__name__}>"
    return normalise(text, root, limit)


_VALUES = (dict, list, tuple, set, frozenset, str, bytes, bytearray, int, float, complex, BaseException)


def state_repr(value: object, root: str = "", limit: int = 400, first: Collection[str] = ()) -> str | None:
    """What an object holds, whatever its own `__repr__` says: `Option(name='x', opts=['-x'])` from its
    public fields (an object before `__init__` ran: `Option()`); None for values of built-in types, whose
    repr already shows what they hold. A call's effect on `self` (a constructor's, a method's) and on an
    argument it mutates is compared in this form. The fields named in `first` (those the callable's lines
    read) come before the others, so that they are shown when the object has more than MAX_FIELDS."""
    kind = type(value)
    if kind.__module__ == "builtins" or isinstance(value, _VALUES):
        return None
    try:
        fields = sorted(_fields(value), key=lambda kv: kv[0] not in first)  # stable: by name in each part
        if not fields:
            object.__getattribute__(value, "__dict__")  # none: a C type (deque), its repr shows more
    except Exception:  # noqa: BLE001
        return None
    try:
        _R.budget, _R.nest = MAX_VALUES, 1
        shown = ", ".join(f"{k}={_R.repr1(v, _R.maxlevel - 1)}" for k, v in fields[:MAX_FIELDS])
        more = ", ..." if len(fields) > MAX_FIELDS else ""
        text = f"{kind.__qualname__}({shown}{more})"
    except Exception as exc:  # noqa: BLE001 (a hostile field must not break the run)
        text = f"<unrepresentable {kind.__name__}: {type(exc).__name__}>"
    return normalise(text, root, limit)


def exception_record(exc: BaseException, root: str = "", limit: int = 400) -> dict:
    return {"kind": "raise", "type": type(exc).__name__, "message": normalise(str(exc), root, limit)}


def return_record(value: object, root: str = "", limit: int = 400) -> dict:
    out = {"kind": "return", "repr": safe_repr(value, root, limit)}
    if isinstance(value, BaseException):  # an exception built, not raised: what it says when shown
        try:
            out["message"] = normalise(str(value), root, limit)
        except Exception:  # noqa: BLE001 (a broken __str__ says nothing either)
            out["message"] = ""
    return out


def scratch_root() -> str:
    return os.getcwd()
