"""The tests' own calls steered at the change: the model, shown a changed callable before and after and the
calls the base run's tests made to it (none of which behaved differently at head), proposes a new value
for one argument of one of those calls that the two versions would treat differently. The call is made
again at base and head with that argument replaced: everything else, `self` included, is the object the
tests built (the tracer's pickle; the harness sets the argument, prereview_harness.py `swap`).

Why: with the regression test removed, the tests' calls usually stop one value short of the bug (a
lowercase keyword, a third dotted part, a negative size). A small model cannot tell a bug from an
intended change, but reading a diff it can often name the input the changed line is about; running that
input on both sides turns its guess into evidence, judged like any other difference (the rules of kind
"steered" in rules.py, then the change's own words). The values are literals (`ast.literal_eval`), so
base and head receive the same ones; a value the model gives that is not a literal is dropped.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

from ... import prompts, pysyntax
from ...findings.language import instruction as language_instruction
from ...models import Model
from ...models.answer import ask_object
from . import expressions
from .callables import Changed
from .compare import AIMED, Call
from .generate import Input, call_params

MAX_ROUNDS = 4  # model rounds per review
MAX_SHOWN = 3  # recorded calls shown per callable
MAX_VALUES = 3  # values proposed per callable
MAX_REPR = 160  # a shown argument's repr, cut


def schema(names: Sequence[str], shown: int) -> dict[str, Any]:
    """The answer's JSON schema: which shown call, which parameter, what literal."""
    return {
        "type": "object",
        "properties": {
            "calls": {
                "type": "array",
                "maxItems": MAX_VALUES,
                "items": {
                    "type": "object",
                    "properties": {
                        "call": {"type": "integer", "minimum": 1, "maximum": shown},
                        "param": {"enum": list(names)},
                        "value": {"type": "string", "maxLength": 120},
                    },
                    "required": ["call", "param", "value"],
                },
            }
        },
        "required": ["calls"],
    }


_ASK = (
    "A function changed. Before:\n<untrusted>\n```python\n{base}\n```\n</untrusted>\n\nAfter:\n<untrusted>\n"
    "```python\n{head}\n```\n</untrusted>\n\nThe diff:\n<untrusted>\n```diff\n{diff}\n```\n</untrusted>\n\n"
    "The project's tests called it like this, and both versions gave the same results:\n{calls}\n\n"
    "Propose up to {n} calls that take the changed lines, so that the version before and the version "
    "after would give different results (or one would raise). Each is one of the calls above with ONE "
    "argument replaced by a new value, written as a Python literal (a number, string, list, dict, tuple, "
    'True/False/None). Answer as JSON: {{"calls": [{{"call": 1, "param": "{example}", "value": "..."}}]}}.'
)


def candidates(
    targets: Sequence[Changed],
    base_calls: Sequence[Call],
    skip: Callable[[Call], bool],
    arguments: bool = True,
) -> list[tuple[Changed, list[Call]]]:
    """The changed callables whose inputs can be steered (edited in place, not a class's body; with
    `arguments`, only those with arguments to vary) with up to MAX_SHOWN of their base calls from the tests
    that can be made again (pickled, distinct inputs: arguments and, without `arguments`, the objects'
    state too), skipping the calls `skip` excludes (a failing or edited test's)."""
    by_key: dict[str, list[Call]] = {}

    def inputs(x: Call) -> tuple[object, ...]:
        return (x.args,) if arguments else (x.args, x.state)

    for x in base_calls:
        if not x.pickled or x.variant or x.replay is not None or skip(x):
            continue
        mine = by_key.setdefault(x.callable, [])
        if len(mine) < MAX_SHOWN and all(inputs(m) != inputs(x) for m in mine):
            mine.append(x)
    return [
        (c, by_key[c.key])
        for c in targets
        if _steerable(c) and (_names(c) or not arguments) and by_key.get(c.key)
    ]


def _steerable(c: Changed) -> bool:
    """A callable edited in place (its source differs at base and head), not a class body."""
    if c.kind not in ("modified", "lost-lines") or c.is_class or "<locals>" in c.qualname:
        return False
    return bool(c.base_source and c.head_source and c.base_source != c.head_source)


def _names(c: Changed) -> list[str]:
    return [p.name for p in call_params(c) if p.kind in ("positional", "keyword")]


def _shown(call: Call) -> str:
    args = [
        f"{name}={value if len(value) <= MAX_REPR else value[:MAX_REPR] + '…'}"
        for name, value in call.args
        if name not in ("self", "cls")
    ]
    return f"{call.callable.rsplit('::', 1)[-1]}({', '.join(args)})"


def propose(c: Changed, calls: Sequence[Call], model: Model, language: str = "") -> tuple[list[Input], float]:
    """The model's steered inputs for `c` (at most MAX_VALUES), and the seconds it took."""
    names = _names(c)
    listed = "\n".join(f"{n}. `{_shown(x)}`" for n, x in enumerate(calls, 1))
    diff = "\n".join(
        difflib.unified_diff(c.base_source.splitlines(), c.head_source.splitlines(), lineterm="", n=1)
    )
    prompt = _ASK.format(
        base=c.base_source[:2500],
        head=c.head_source[:2500],
        diff="\n".join(diff.splitlines()[2:])[:1500],
        calls=listed,
        n=MAX_VALUES,
        example=names[0],
    )
    system = prompts.load("behaviour_steer") + language_instruction(language)
    data, seconds = ask_object(model, system, prompt, schema(names, len(calls)), max_tokens=200)
    rows = data.get("calls")
    out: list[Input] = []
    for row in rows if isinstance(rows, list) else []:
        got = _one(row, calls, names)
        if got is not None and got not in out:
            out.append(got)
    return out[:MAX_VALUES], seconds


def _one(row: Any, calls: Sequence[Call], names: Sequence[str]) -> Input | None:
    """One answer row as an input: the shown call it names, its parameter set to a literal's repr."""
    if not isinstance(row, dict):
        return None
    n, name, text = row.get("call"), row.get("param"), row.get("value")
    if not isinstance(n, int) or not 1 <= n <= len(calls) or not isinstance(name, str):
        return None
    if name not in names or not isinstance(text, str):
        return None
    try:
        value = repr(pysyntax.literal_eval(text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    call = calls[n - 1]
    was = dict(call.args).get(name)
    if was == value:
        return None  # the same value: nothing steered
    given = [(k, value if k == name else v) for k, v in call.args]
    if was is None:
        given.append((name, value))
    return Input(call.callable, call.origin, pickled=call.pickled, shown=tuple(given), swap=((name, value),))


def inputs(
    quiet: Sequence[Changed],
    base_calls: Sequence[Call],
    skip: Callable[[Call], bool],
    model: Callable[[], Model],
    read: Callable[[str], str | None],
    *,
    language: str = "",
    deadline: float | None = None,
) -> tuple[list[Input], float]:
    """Steered inputs for the changed callables whose tests' calls showed no difference (`quiet`), at
    most MAX_ROUNDS model rounds until the deadline, callable by callable: its calls with one argument
    replaced (where it takes arguments and a call can be made again), then expressions written from a
    test that reaches it (expressions.py). (inputs, the model's seconds)"""
    out: list[Input] = []
    seconds = 0.0
    for asked, ask in enumerate(_rounds(quiet, base_calls, skip, read, language)):
        if asked >= MAX_ROUNDS or (deadline is not None and time.monotonic() > deadline):
            break
        got, took = ask(model())
        out += got
        seconds += took
    return out, seconds


def _rounds(
    quiet: Sequence[Changed],
    base_calls: Sequence[Call],
    skip: Callable[[Call], bool],
    read: Callable[[str], str | None],
    language: str,
) -> Iterator[Callable[[Model], tuple[list[Input], float]]]:
    """The model rounds in order, each prepared only when it is reached (choosing a test reads files)."""
    values = {c.key: calls for c, calls in candidates(quiet, base_calls, skip)}
    for c in quiet:
        if c.key in values:
            yield partial(propose, c, values[c.key], language=language)
        picked = expressions.chosen_test(c, base_calls, read) if _steerable(c) else None
        if picked is not None:
            yield partial(expressions.propose, c, *picked, language=language)


def note(
    targets: Sequence[Changed], steered: Sequence[Input], calls: Sequence[Call], diffs: Sequence[Any]
) -> list[str]:
    """One note per steered callable that showed no difference: what the model tried and what ran."""
    ran: dict[tuple[str, bool], int] = {}  # (callable, an expression?) -> calls that ran (and reached)
    for x in calls:
        if (
            x.replay is not None
            and (x.replay.swap or x.replay.probe)
            and not x.replay.seeded
            and x.result.get("kind") != "unavailable"
        ):
            key = (x.callable, bool(x.replay.probe))
            ran[key] = ran.get(key, 0) + 1
    differing = {d.callable for d in diffs if d.variant.startswith(AIMED)}
    out = []
    for c in targets:
        tried = [i for i in steered if i.callable == c.key and not i.seeded]
        if not tried or c.key in differing:
            continue
        parts = []
        values = [i for i in tried if i.swap]
        if values:
            shown = ", ".join(f"`{n}={v[:40]}`" for i in values[:3] for n, v in i.swap)
            parts.append(f"{ran.get((c.key, False), 0)} of {len(values)} test call(s) with {shown} ran")
        written = [i for i in tried if i.probe]
        if written:
            parts.append(
                f"{ran.get((c.key, True), 0)} of {len(written)} expression(s) written from test "
                f"`{written[0].origin}` reached it (`{written[0].probe[:80]}`)"
            )
        out.append(
            f"behaviour: `{c.qualname}`: no difference on the inputs the model aimed at the changed lines ("
            + "; ".join(parts)
            + ")"
        )
    return out
