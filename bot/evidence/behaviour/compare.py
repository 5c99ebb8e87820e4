"""Base against head, call by call: the same callable on the same inputs giving a different result.

Calls are matched by (test id, callable, argument reprs, n-th such call in that test), so an extra or a
missing call at head shifts nothing; a call only one side made is not evidence (its inputs differ).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .generate import Input


# the variants of the tests' calls aimed at the change (harness.py `_variant`): judged by the "steered" rules
AIMED = ("steered ", "seeded ", "crossed ", "probe ", "amplified ")
# the tests' outer calls made again varied (prereview_outer.py): "outer case x", "outer edge x", ...
OUTER = "outer "


@dataclass(frozen=True)
class Call:
    """One observed call: where it came from, its inputs, what it did."""

    callable: str  # "path::qualname"
    origin: str  # a test id, or "doctest", "hypothesis", "boundary", "model"
    args: tuple[tuple[str, str], ...]  # (name, repr) in call order
    result: dict[
        str, Any
    ]  # {"kind": "return", "repr"} | {"kind": "raise", "type", "message"} | timeout | crash
    mutated: tuple[tuple[str, str], ...] = ()  # (name, repr after the call) for arguments it changed
    expr: str = ""  # the call as written (doctest), else built from args
    want: str | None = None  # a doctest example's expected output
    replay: Input | None = None  # the generated input it came from (None: a call from the tests)
    variant: str = ""  # a test's call made again with argument x varied: "wrapped x" (in a forwarding
    # proxy) or "line break x" (a str/bytes ending in a newline)
    state: tuple[tuple[str, str], ...] = ()  # (name, what it held) of its object arguments, before the
    # call (prereview_probe.state_repr): part of the inputs, so a `self` that head built differently is
    # not compared as the same call
    pickled: tuple[str, ...] = ()  # its arguments as the tracer pickled them (opaque here: only the
    # sandboxed harness unpickles them), so the same call can be made again at the other side

    def text(self) -> str:
        if self.expr:
            return self.expr
        parts = self.callable.rsplit("::", 1)[-1].split(".")
        name = parts[-1]
        if name == "__init__" and len(parts) > 1:  # a constructor: called as its class
            name = parts[-2]
        shown = [r for n, r in self.args if n not in ("self", "cls") and "." not in n]
        given = [f"{n}={r}" for n, r in self.args if "." in n]  # an attribute set first (seeded.py)
        return f"{name}({', '.join(shown)})" + (f" with {', '.join(given)}" if given else "")


@dataclass(frozen=True)
class Difference:
    callable: str
    call: str  # e.g. "sieve(10)"
    origin: str
    before: str  # e.g. "[2, 3, 5, 7]"
    after: str
    base: dict[str, Any]
    head: dict[str, Any]
    args: tuple[tuple[str, str], ...] = ()
    want: str | None = None  # a docstring example's expected output, when that is where the input came from
    replay: Input | None = None  # head's generated input, which a patched head can be given again
    variant: str = ""  # see Call.variant

    @property
    def head_failed(self) -> bool:
        """Head raises, hangs or crashes where base returned."""
        return self.base.get("kind") == "return" and self.head.get("kind") in ("raise", "timeout", "crash")

    def example(self) -> str:
        return f"{self.call}: before {self.before}; after {self.after}"


def describe(result: dict[str, Any], mutated: tuple[tuple[str, str], ...] = ()) -> str:
    kind = result.get("kind")
    if kind == "return":
        text = str(result.get("repr"))
    elif kind == "raise":
        msg = result.get("message") or ""
        text = f"raises {result.get('type')}" + (f": {msg}" if msg else "")
    elif kind == "timeout":
        text = f"hangs (no result after {result.get('seconds', '?')}s)"
    elif kind == "crash":
        text = "crashes the interpreter"
    else:
        text = f"cannot be called ({result.get('type', kind)}: {result.get('message', '')})"
    if mutated:
        text += " and changes " + ", ".join(f"{n} to {r}" for n, r in mutated)
    return text


def from_trace(text: str) -> tuple[list[Call], dict[str, int]]:
    """Calls of a tracer file (JSON lines), in the order they were made, and the calls it dropped per
    callable (over its cap). A line holds one set of inputs and outcome with every (test, place) it was
    seen at."""
    placed: list[tuple[int, Call]] = []
    dropped: dict[str, int] = {}
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        if "dropped" in rec:  # one such line per process (pytest-xdist: one per worker)
            try:
                for key, n in dict(rec["dropped"]).items():
                    dropped[str(key)] = dropped.get(str(key), 0) + int(n)
            except (TypeError, ValueError):
                pass
            continue
        try:
            args = tuple((str(k), str(v)) for k, v in rec["args"].items())
            mutated = tuple(sorted((str(k), str(v)) for k, v in rec.get("mutated", {}).items()))
            variant = str(rec.get("variant") or "")
            state = tuple(sorted((str(k), str(v)) for k, v in rec.get("state", {}).items()))
            pickled = rec.get("pickled") or []
            pickled = tuple(pickled) if all(isinstance(p, str) for p in pickled) else ()
            for test, seq in rec["at"]:
                call = Call(
                    rec["callable"],
                    str(test),
                    args,
                    rec["result"],
                    mutated,
                    expr=str(rec.get("expr") or ""),  # an outer call (prereview_outer.py): its own text
                    variant=variant,
                    state=state,
                    pickled=pickled,
                )
                placed.append((int(seq), call))
        except (KeyError, AttributeError, TypeError, ValueError):
            continue
    placed.sort(key=lambda p: p[0])
    return [c for _, c in placed], dropped


_Key = tuple[str, str, tuple[tuple[str, str], ...], str, str, tuple[tuple[str, str], ...]]


def _keyed(calls: Iterable[Call]) -> dict[tuple[_Key, int], Call]:
    seen: dict[_Key, int] = {}
    out = {}
    for c in calls:
        k = (c.origin, c.callable, c.args, c.expr, c.variant, _ids(c.state))
        n = seen.get(k, 0)
        seen[k] = n + 1
        out[(k, n)] = c
    return out


# Fresh random identifiers (uuid4, token_hex, multipart boundaries) differ between any two runs; a
# difference that is only in them is noise, not evidence. (Calls from the tests run once per side, so the
# second base run that weeds out other noise in generated calls is not there to catch these.)
_RANDOM_ID = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b[0-9a-f]{16,}\b|\b[0-9A-F]{16,}\b"
)


def same(a: Call, b: Call) -> bool:
    return _outcome(a) == _outcome(b)


def _outcome(c: Call) -> tuple[Any, ...]:
    r = c.result
    kind = r.get("kind")
    if kind == "return":
        return (kind, _ids(r.get("full") or r.get("repr")), _ids(c.mutated))  # full: an outer call's
    if kind == "raise":
        return (kind, r.get("type"), _ids(r.get("message")), _ids(c.mutated))
    return (kind,)


def _ids(value: Any) -> Any:
    """The value with random-looking identifiers blanked (strings, and the reprs inside tuples)."""
    if isinstance(value, str):
        return _RANDOM_ID.sub("<id>", value)
    if isinstance(value, tuple):
        return tuple(_ids(v) for v in value)
    return value


def differences(
    base: Iterable[Call], head: Iterable[Call], *, limit_per_callable: int = 8
) -> list[Difference]:
    """Head calls whose inputs base saw too, with another result; at most a few per callable."""
    b = _keyed(base)
    out: list[Difference] = []
    per: dict[str, int] = {}
    shown: set[tuple[str, str, str, str]] = set()
    for key, hc in _keyed(head).items():
        bc = b.get(key)
        if bc is None or same(bc, hc) or _no_instance(bc) or _no_instance(hc):
            continue
        d = Difference(
            callable=hc.callable,
            call=hc.text(),
            origin=hc.origin,
            before=describe(bc.result, bc.mutated),
            after=describe(hc.result, hc.mutated),
            base=bc.result,
            head=hc.result,
            args=hc.args,
            want=hc.want,
            replay=hc.replay,
            variant=hc.variant,
        )
        sig = (d.callable, d.call, d.before, d.after)
        if sig in shown or per.get(d.callable, 0) >= limit_per_callable:
            continue
        shown.add(sig)
        per[d.callable] = per.get(d.callable, 0) + 1
        out.append(d)
    # head failures first: they are judged without the model
    return sorted(out, key=lambda d: not d.head_failed)


def _no_instance(c: Call) -> bool:
    """A method whose class could not be built without arguments on one side, or a replayed call whose
    recorded arguments that side could not unpickle: nothing was called there."""
    return c.result.get("kind") == "unavailable" and c.result.get("type") in ("instance", "replay")


def unmatched(base: Iterable[Call], head: Iterable[Call]) -> list[Call]:
    """Base calls with no head call of the same inputs in the same test (the test is gone or edited at
    head, or head built the call's `self` differently): what a replay at head can still compare."""
    h = _keyed(head)
    return [c for key, c in _keyed(base).items() if key not in h]


def differing(base: Iterable[Call], head: Iterable[Call], among: Callable[[str], bool]) -> list[Call]:
    """Base calls, from the tests `among` picks, whose head call of the same inputs in the same test gave
    another result: what the test ran differently at each side (a test the change edits configures its
    objects otherwise even where their reprs agree), to be made again at both sides on base's recorded
    arguments."""
    h = _keyed(head)
    out = []
    for key, c in _keyed(base).items():
        other = h.get(key)
        if other is not None and among(c.origin) and not c.variant and not same(c, other):
            out.append(c)
    return out


def reached(calls: Iterable[Call]) -> set[str]:
    return {c.callable for c in calls}


_ORIGIN_RANK = {"doctest": 0, "boundary": 1, "model": 2, "hypothesis": 3}


def clearest(diffs: Sequence[Difference]) -> list[Difference]:
    """Examples a reader takes in fastest: tests and docstrings first, then short calls."""
    return sorted(diffs, key=lambda d: (_ORIGIN_RANK.get(d.origin, -1), len(d.call) + len(d.before)))
