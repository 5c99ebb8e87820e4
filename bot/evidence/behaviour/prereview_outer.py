"""The tests' outer calls, made again varied (the tracer's, prereview_trace.py).

A test calls the project's own function with data it wrote (`parse("select …")`), and that function
reaches a changed callable with objects it built (`group_functions(token_list)`). The changed callable's
arguments are then objects no variant can vary; the outer call's are plain data: str, bytes, numbers,
lists, dicts. So for the first few distinct outer inputs per changed callable, after the test ran, the
outer call is made again in a forked child (prereview_fork.py), at the end of the run (the inputs of
lowest hash: a sample spread over the run, the same at base and head): once as the test made it, then with one
plain argument varied (prereview_variants.OUTER_KINDS: in another letter case, with a line break at its
end, at an edge of its type). Base and head make the same calls, and what each returns is compared whole:
its repr, with the public fields of the objects in it shown even where their class has a `__repr__` of
its own (a parse tree's repr shows its text, not how it was grouped). Each record is the changed
callable's, with the outer call as its text (`expr`) and the unvaried call's result beside it
(`result["unvaried"]`), so a result that ignored an aspect of the input at base and depends on it at head
can be told (varied.py `lost_invariance`).

Only a module-level function or a method of the project (not a test file, not an installed package)
called from the test's own file is an outer call, and only one whose arguments are all plain data but a
method's `self`, which is copied (`copy.deepcopy`) when the changed callable is reached and compared by
what it holds: nothing the test built is shared with the child but copies. Its arguments are read when
the changed callable is reached (a parameter the function rebound before that is taken as rebound).

Origin: a general idea, input mutation at the system boundary (metamorphic testing: letter case, a
trailing newline, an empty value), narrowed to the tests' own calls that reach the change; not a corpus
case.

Runs INSIDE the sandbox, in the project's interpreter; imports nothing from `bot`.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
from typing import Any

import prereview_fork as fork
import prereview_probe as probe
from prereview_frames import call_of
from prereview_variants import OUTER_KINDS

_ATOMS = (str, bytes, int, float, bool, type(None))
_ASYNC = 0x80 | 0x100 | 0x200  # CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR
MAX_HUNG = 2
PER_TEST = 64  # calls of a changed callable per test whose outer call is looked at (a test may loop)
LIMIT = 1200  # characters of an outer call's result as shown (a whole structure, not one value)
FULL = 4000  # ... as compared (the host cuts every string of a trace there: sandbox/exchange.py)


def plain(value: Any, depth: int = 0) -> bool:
    """Data a test writes: atoms, and lists, tuples and dicts of them (two levels, 50 items)."""
    kind = type(value)
    if kind in _ATOMS:
        return True
    if kind in (list, tuple) and depth < 2 and len(value) <= 50:
        return all(plain(v, depth + 1) for v in value)
    if kind is dict and depth < 2 and len(value) <= 50:
        return all(type(k) in _ATOMS and plain(v, depth + 1) for k, v in value.items())
    return False


def _strings(value: Any) -> list[str]:
    """The str (and decoded bytes) inside plain data."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, bytes):
        return [value.decode("latin-1")]
    if isinstance(value, dict):
        value = [*value, *value.values()]
    return [s for v in value for s in _strings(v)] if isinstance(value, (list, tuple)) else []


def is_test_path(rel: str) -> bool:
    parts = rel.split("/")
    name = parts[-1]
    return (
        any(p in ("test", "tests", "testing") for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


_F = probe._Repr()  # the probe's repr, showing more of a structure (see `own_containers`)
_F.own_containers, _F.max_nest, _F.max_values = True, 6, 3000
_F.maxlist = _F.maxtuple = _F.maxset = _F.maxfrozenset = 40
_F.maxdict, _F.maxstring, _F.maxother, _F.maxlevel = 20, 300, 300, 12


class Outer:
    def __init__(self, spec: dict[str, Any], root: str, seconds: float) -> None:
        self.per_target = int(spec.get("outer", 0)) if hasattr(os, "fork") else 0
        self.left = int(spec.get("outer_calls", 0))  # forked calls this run may still make
        self.root, self.seconds = root, seconds
        # changed callable -> the outer inputs kept: (rank, hash, sig) -> (test, qual, fn, slots, pos, kw)
        self.kept: dict[str, dict[tuple[int, str, str], tuple[Any, ...]]] = {}
        self.words: dict[str, dict[str, int]] = spec.get("words", {})  # callable -> its literals' weights
        self.hung = 0
        self.looked: dict[tuple[str, str], int] = {}  # (test, callable) -> its calls looked at
        self.under = os.path.realpath(root).rstrip("/") + "/"
        self.project: dict[Any, bool] = {}  # code object -> project code (not a test, not installed)

    def note(self, frame: Any, key: str, test: str) -> None:
        """The changed callable `key` starts in `frame`: take the test's outer call around it, if any.
        Per callable the inputs whose data names most of its literals are kept (seeded.words), then those
        of lowest hash (a sample spread over the whole run, the same at base and head where the tests
        make the same calls), to be made again at its end (`run`)."""
        seen = self.looked.get((test, key), 0)
        if not self.per_target or self.left <= 0 or seen >= PER_TEST:
            return
        self.looked[(test, key)] = seen + 1
        outer = self._outer(frame, test.split("::", 1)[0])
        if outer is None:
            return
        code = outer.f_code
        qual = getattr(code, "co_qualname", code.co_name)
        if qual.count(".") > 1 or "<" in qual or code.co_flags & _ASYNC:
            return
        call = call_of(outer, qual)
        if call is None:
            return
        fn, names, pos, kw = call
        method = "." in qual  # a method: `self` as it is when the change is reached, copied; the rest data
        if method and not (pos and names[0] == "self"):
            return
        values = [*pos[method:], *kw.values()]
        if not all(plain(v) for v in values):
            return
        n = code.co_argcount
        slots = [(names[i] if i < n else f"*{i - n}", i) for i in range(method, len(pos))] + [
            (k, k) for k in kw
        ]
        held = (probe.state_repr(pos[0], self.root) or probe.safe_repr(pos[0], self.root)) if method else ""
        shown = [(s, probe.safe_repr(v, self.root)) for s, v in zip(slots, values, strict=True)]
        sig = qual + held + repr(shown)
        rank = (-self._score(key, values), hashlib.sha256(sig.encode()).hexdigest(), sig)
        kept = self.kept.setdefault(key, {})
        if rank in kept or (len(kept) >= self.per_target and rank > max(kept)):
            return
        try:
            kept[rank] = (test, qual, fn, slots, copy.deepcopy(pos), copy.deepcopy(kw), held)
        except Exception:  # noqa: BLE001 (a `self` that cannot be copied: a lock, a socket)
            return
        if len(kept) > self.per_target:
            del kept[max(kept)]

    def _score(self, key: str, values: list[Any]) -> int:
        """The weights of the callable's literals that the input's str data holds (any letter case; a
        word as a word)."""
        text = " ".join(_strings(values)).casefold()
        score = 0
        for word, weight in self.words.get(key, {}).items():
            w = word.casefold()
            if re.search(rf"(?<!\w){re.escape(w)}(?!\w)", text) if w.isidentifier() else w in text:
                score += int(weight)
        return score

    def _outer(self, frame: Any, test_file: str) -> Any:
        """The frame the test's own file called that leads to `frame` (not `frame`), if project code."""
        below, f = frame, frame.f_back
        while f is not None:
            name = f.f_code.co_filename.replace(os.sep, "/")
            if name == test_file or name.endswith("/" + test_file):
                break
            below, f = f, f.f_back
        if f is None or below is frame:
            return None  # not under a test function, or the test calls the changed callable itself
        code = below.f_code
        if code not in self.project:
            name = os.path.realpath(code.co_filename)
            self.project[code] = name.startswith(self.under) and "-packages/" not in name
            self.project[code] &= not is_test_path(name[len(self.under) :])
        return below if self.project[code] else None

    def run(self) -> list[tuple[str, dict[str, Any]]]:
        """(test, record) of each outer call kept, made again as it was and varied."""
        out: list[tuple[str, dict[str, Any]]] = []
        for key, kept in sorted(self.kept.items()):
            for _, (test, qual, fn, slots, pos, kw, held) in sorted(kept.items()):
                out += [(test, rec) for rec in self._varied(key, qual, fn, slots, pos, kw, held)]
        self.kept = {}
        return out

    def _varied(
        self,
        key: str,
        qual: str,
        fn: Any,
        slots: list[tuple[str, Any]],
        pos: list[Any],
        kw: dict[str, Any],
        held: str,
    ) -> list[dict[str, Any]]:
        """The outer call as the test made it, then varied; a method's `self` is shown by what it holds."""
        origin = self._call(fn, pos, kw)
        if origin is None:
            return []
        out: list[dict[str, Any]] = []
        shown = {s: probe.safe_repr(pos[at] if isinstance(at, int) else kw[at], self.root) for s, at in slots}
        call = f"{type(pos[0]).__name__}(…).{qual.split('.')[1]}" if held else qual
        for label, make in OUTER_KINDS:
            tried = 0  # at most two arguments varied per kind
            for name, at in slots:
                values = make(pos[at] if isinstance(at, int) else kw[at]) if tried < 2 else None
                if not values:
                    continue
                tried += 1
                for value in values:
                    p, k = list(pos), dict(kw)
                    if isinstance(at, int):
                        p[at] = value
                    else:
                        k[at] = value
                    got = self._call(fn, p, k)
                    if got is None:
                        continue
                    args = {
                        **({"self": held} if held else {}),
                        **shown,
                        name: probe.safe_repr(value, self.root),
                    }
                    given = (v if s.startswith("*") else f"{s}={v}" for s, v in args.items() if s != "self")
                    out.append(
                        {
                            "callable": key,
                            "args": args,
                            "variant": f"outer {label} {name}",
                            "expr": f"{call}({', '.join(given)})",
                            "result": {**got, "unvaried": origin},
                            "mutated": {},
                        }
                    )
        return out

    def _call(self, fn: Any, pos: list[Any], kw: dict[str, Any]) -> dict[str, Any] | None:
        if self.left <= 0 or self.hung >= MAX_HUNG:
            return None
        self.left -= 1
        got, hung = fork.call_in_child(
            fn,
            pos,
            kw,
            {},
            self.seconds,
            self._record,
            lambda e: probe.exception_record(e, self.root, LIMIT),
            lambda v: probe.safe_repr(v, self.root),
        )
        self.hung += hung
        return None if got is None else got["result"]

    def _record(self, value: Any) -> dict[str, Any]:
        """The result as shown (LIMIT characters) and, when longer, as compared (`full`): a difference
        deep in a structure counts though a reader sees its start."""
        out = probe.return_record(value, self.root, LIMIT)
        try:
            text = _F.repr(value)
        except Exception:  # noqa: BLE001 (a hostile field: the plain repr stands)
            return out
        out["repr"] = probe.normalise(text, self.root, LIMIT)
        if len(text) > LIMIT:
            out["full"] = probe.normalise(text, self.root, FULL)
        return out
