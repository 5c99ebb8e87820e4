"""The tests' own calls made again with the changed lines' own literals: no model asked.

Where the tests reach a changed callable and every call behaves the same at base and head, the inputs
usually stop one value short of the changed branch: the string the new condition tests for, the number
at its bound. The changed lines name those values themselves (`if sep == "/"`, `n > 3`, `startswith("\\r")`).
So each string and number literal on the callable's changed lines (added or removed) becomes a new value
for one argument of a call the tests made, of the same type: the literal itself, the recorded string with
it appended, a number and its neighbours (`n - 1`, `n + 1`). The call is made again at base and head
with `self` and the other arguments as the tests built them (the tracer's pickle; steer.py's `swap`), and
a difference is judged as the model-steered ones are (rules.py kind "steered", then the change's words).

The value the changed line tests often sits inside an object the call is given, not in an argument
(`if self.sep == "/"`, `token.value.startswith("_")`). So each attribute of `self` or of an object
argument that the callable's lines name (`param.attr`, those on the changed lines first) gets the same
literals, when it holds a value of the literal's type: the tracer showed its fields (`Call.state`), and
the harness checks the type again and sets the attribute on the unpickled object before the call
(prereview_steer.py `swapped`; an instance attribute or slot only, no property or setter is run).

Origin: a general idea, constant seeding in test generation (fuzzers' dictionaries taken from the code
under test; Pynguin seeds its inputs with the module's constants), narrowed to the changed lines; not a
corpus case.
"""

from __future__ import annotations

import difflib
import io
import re
import tokenize
from collections.abc import Callable, Sequence
from typing import Any

from ... import pysyntax
from .callables import Changed
from .compare import Call
from .generate import Input
from .scan import brackets
from .steer import candidates

MAX_LITERAL = 40  # characters of a string literal taken
MAX_PER_CALLABLE = 6  # inputs per changed callable
MAX_PER_PARAM = 3  # values tried per argument of one call


_ATTRIBUTE = re.compile(r"\b([A-Za-z_]\w*)\.([A-Za-z_]\w*)")
UNSHOWN = object()  # an attribute the tracer did not show (private, or past its fields): its type unknown
OBJECT = object()  # an attribute the tracer showed holding something other than a literal


def _changed_lines(c: Changed) -> list[str]:
    base, head = c.base_source.splitlines(), c.head_source.splitlines()
    return [
        line[1:]
        for line in difflib.unified_diff(base, head, lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def literals(c: Changed) -> list[Any]:
    """The str, bytes, int and float literals on `c`'s changed lines (added and removed), in order, once
    each; docstrings and booleans aside."""
    out: list[Any] = []
    for line in _changed_lines(c):
        for value in _tokens(line.strip()):
            if value not in out and type(value) in (str, bytes, int, float):
                out.append(value)
    return out


def words(c: Changed) -> dict[str, int]:
    """The str literals of `c` (two characters or more) by weight: 2 on its changed lines, 1 elsewhere in
    its head source. The tests' outer calls whose data holds them are made again first
    (prereview_outer.py): an input that names what the callable compares against reaches its branches."""
    out: dict[str, int] = {}
    for weight, lines in ((1, c.head_source.splitlines()), (2, _changed_lines(c))):
        for line in lines:
            for value in _tokens(line.strip()):
                if isinstance(value, str) and len(value.strip()) >= 2:
                    out[value] = weight
    return out


def _tokens(line: str) -> list[Any]:
    out: list[Any] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line).readline):
            if tok.type not in (tokenize.STRING, tokenize.NUMBER):
                continue
            try:
                value = pysyntax.literal_eval(tok.string)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            docstring = tok.string.endswith(('"""', "'''"))
            if isinstance(value, (str, bytes)) and (len(value) > MAX_LITERAL or docstring):
                continue
            out.append(value)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # a line cut out of a statement: the tokens read before the error are kept
    return out


def values(was: Any, seeds: Sequence[Any]) -> list[Any]:
    """New values for an argument that held `was`, from the seeds of its own type (none equal to it)."""
    out: list[Any] = []
    kind = type(was)
    for seed in seeds:
        if kind in (str, bytes) and type(seed) is kind:
            out += [seed, was + seed]
        elif kind in (int, float) and type(seed) in (int, float):
            out += [kind(seed), kind(seed) - 1, kind(seed) + 1]
    return [v for v in dict.fromkeys(out) if v != was]


def named(c: Changed) -> list[tuple[str, str]]:
    """The (object, attribute) pairs `c`'s lines name (`self.sep`, `token.value`), those on its changed
    lines first, once each: not a dunder, not a name the lines call (a method), not a constructor's `self`
    (it is built by the call)."""
    source = f"{c.base_source}\n{c.head_source}"
    called = {m.group(1, 2) for m in _ATTRIBUTE.finditer(source) if source[m.end() :].lstrip()[:1] == "("}
    constructor = c.name in ("__init__", "__new__")
    out: list[tuple[str, str]] = []
    for text in ("\n".join(_changed_lines(c)), source):
        for obj, attr in _ATTRIBUTE.findall(text):
            if attr.startswith("__") or (obj, attr) in called or (constructor and obj == "self"):
                continue
            if (obj, attr) not in out:
                out.append((obj, attr))
    return out


def attributes(names: Sequence[tuple[str, str]], call: Call) -> list[tuple[str, Any]]:
    """Of the `names` (`named`), those of `call`'s object arguments (`self` included): (`param.attr`, the
    value the tracer showed, OBJECT, or UNSHOWN). A public name the tracer's whole state of the object does
    not show is no instance attribute (a property, a class attribute): left out; a private one, or one past
    a state cut short, is UNSHOWN."""
    wanted = {obj for obj, _ in names}  # each object's state read once
    fields = {obj: _fields(state) for obj, state in call.state if obj in wanted}
    out: list[tuple[str, Any]] = []
    for obj, attr in names:
        if obj not in fields:
            continue
        shown, whole = fields[obj]
        if attr in shown:
            out.append((f"{obj}.{attr}", shown[attr]))
        elif not whole or attr.startswith("_"):
            out.append((f"{obj}.{attr}", UNSHOWN))
    return out


def _fields(state: str) -> tuple[dict[str, Any], bool]:
    """The fields of an object as the tracer shows it (`Token(value='x', ttype=<Keyword>)`; prereview_probe
    `state_repr`): literals as values, anything else OBJECT; and whether the state shows them all (not cut
    short with `…`, no `...` for more fields)."""
    texts, whole = shown_fields(state)
    out: dict[str, Any] = {}
    for key, value in texts.items():
        try:
            out[key] = pysyntax.literal_eval(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            out[key] = OBJECT
    return out, whole


def shown_fields(state: str) -> tuple[dict[str, str], bool]:
    """The fields of an object as the tracer shows it, as text (`C(a=1, b=<X>)`: {'a': '1', 'b': '<X>'}),
    the one cut short left out; and whether the state shows them all. The state comes from the sandbox:
    one longer than the tracer writes is a forged one, not read."""
    if len(state) > pysyntax.LITERAL_CHARS or "(" not in state:
        return {}, False
    body = state[state.index("(") + 1 :]
    whole = body.endswith(")")
    parts = _top_level(body[:-1] if whole else body)
    if not whole:
        parts = parts[:-1]  # the one cut short
    out: dict[str, str] = {}
    for part in parts:
        key, eq, value = part.partition("=")
        key = key.strip()
        if part.strip() == "...":
            whole = False
        if eq and key.isidentifier():
            out[key] = value.strip()
    return out, whole


def _top_level(body: str) -> list[str]:
    """`body` split at its top-level commas (outside quotes and brackets, `<...>` reprs included)."""
    parts: list[str] = []
    start = 0
    for i, ch, depth in brackets(body, "([{<", ")]}>"):
        if ch == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
    parts.append(body[start:])
    return parts


def attribute_values(was: Any, seeds: Sequence[Any]) -> list[Any]:
    """New values for an attribute that held `was`: as for an argument, but a string the tracer cut short
    (`...`) gets the literals alone, and an attribute whose value was not shown gets every literal (the
    harness refuses one of another type)."""
    if was is UNSHOWN:
        return list(seeds)
    if type(was) not in (str, bytes, int, float):
        return []  # OBJECT, a bool, a container
    if isinstance(was, str) and ("..." in was or "…" in was):
        return [s for s in seeds if type(s) is str and s != was]
    return values(was, seeds)


def inputs(
    quiet: Sequence[Changed], base_calls: Sequence[Call], skip: Callable[[Call], bool], most: int
) -> list[Input]:
    """At most `most` seeded calls for the changed callables whose tests' calls showed no difference
    (`quiet`)."""
    out: list[Input] = []
    for c, calls in candidates(quiet, base_calls, skip, arguments=False) if most > 0 else []:
        seeds = literals(c)
        if not seeds:
            continue
        names = named(c)
        mine: list[Input] = []
        for call in calls:
            for name, shown in call.args:
                if name in ("self", "cls"):
                    continue
                try:
                    was = pysyntax.literal_eval(shown)
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    continue  # an object: no literal of its type
                for value in values(was, seeds)[:MAX_PER_PARAM]:
                    given = tuple((k, repr(value) if k == name else v) for k, v in call.args)
                    swap = ((name, repr(value)),)
                    mine.append(
                        Input(c.key, call.origin, pickled=call.pickled, shown=given, swap=swap, seeded=True)
                    )
            for name, was in attributes(names, call):
                for value in attribute_values(was, seeds)[:MAX_PER_PARAM]:
                    swap = ((name, repr(value)),)
                    given = call.args + swap  # Call.text shows it after the arguments
                    mine.append(
                        Input(c.key, call.origin, pickled=call.pickled, shown=given, swap=swap, seeded=True)
                    )
        # the calls take turns, so one call's arguments do not use up the callable's share
        out += spread(mine)[:MAX_PER_CALLABLE]
        if len(out) >= most:
            break
    return out[:most]


def spread(inputs: list[Input]) -> list[Input]:
    """Round-robin over (call, parameter): the first value for each, then the second, and so on."""
    groups: dict[tuple[str, tuple[str, ...], str], list[Input]] = {}
    for i in inputs:
        groups.setdefault((i.origin, i.pickled, i.swap[0][0]), []).append(i)
    out: list[Input] = []
    queues = list(groups.values())
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def note(
    targets: Sequence[Changed], inputs: Sequence[Input], calls: Sequence[Call], diffs: Sequence[Any]
) -> list[str]:
    """One note per seeded callable that showed no difference: which literals its calls were given."""
    seeded = [i for i in inputs if i.seeded and not i.crossed]
    return quiet_notes(targets, seeded, calls, diffs, "seeded ", "given the changed lines' literals")


def quiet_notes(
    targets: Sequence[Changed],
    tried: Sequence[Input],
    calls: Sequence[Call],
    diffs: Sequence[Any],
    prefix: str,
    given: str,
) -> list[str]:
    """One note per callable whose `tried` inputs (a swap each) gave no difference of variant `prefix`:
    how many of its calls ran, and the first few values they were `given`."""
    differing = {d.callable for d in diffs if d.variant.startswith(prefix)}
    ran: dict[str, int] = {}
    for x in calls:
        if x.replay is not None and x.replay in tried and x.result.get("kind") != "unavailable":
            ran[x.callable] = ran.get(x.callable, 0) + 1
    out = []
    for c in targets:
        mine = [i for i in tried if i.callable == c.key]
        if not mine or c.key in differing:
            continue
        shown = ", ".join(list(dict.fromkeys(f"`{n}={v[:40]}`" for i in mine for n, v in i.swap))[:3])
        out.append(
            f"behaviour: `{c.qualname}`: no difference on the tests' calls {given} "
            f"({ran.get(c.key, 0)} of {len(mine)} ran: {shown})"
        )
    return out
