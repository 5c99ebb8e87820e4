"""Inputs for the changed callables the tests do not reach, drawn on the host as Python literal reprs.

Sources, in order: the callable's docstring examples (doctest), values drawn by Hypothesis from the type
hints (read from the AST: nothing of the change is imported here), boundary values from the code's own
integer literals, and a few calls the model proposes (grammar-constrained JSON of literal reprs, read with
`ast.literal_eval`). Every input is a literal repr, so base and head receive exactly the same values.
"""

from __future__ import annotations

import ast
import doctest
import itertools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ... import prompts, pysyntax
from ...findings.language import instruction as language_instruction
from ...models import Message, Model
from ...models.answer import ask_json
from .callables import Changed, Param, calls_by_name, in_class, int_literals
from .inputs import Input as Input  # re-exported: the stage's modules import it from here
from .objects import Built, ProjectClass, values
from .scan import brackets


@dataclass
class Plan:
    inputs: list[Input] = field(default_factory=list)
    skipped: list[tuple[Changed, str]] = field(default_factory=list)  # (callable, why no inputs)
    late: list[Changed] = field(default_factory=list)  # not planned: the deadline came first


def callable_ok(c: Changed) -> str | None:
    """Why the harness cannot call it directly (None: it can)."""
    if "<locals>" in c.qualname:
        return "a nested function (not reachable from its module)"
    if c.is_method and c.name.startswith("__") and c.name.endswith("__") and c.name != "__init__":
        return "a special method (only its tests and doctests reach it)"  # `__init__`: through its class
    if c.is_async or c.is_generator:
        return "a coroutine or generator"
    return None


def call_params(c: Changed) -> tuple[Param, ...]:
    """The parameters a caller passes: a method's `self`/`cls` is not one of them."""
    return c.params[1:] if c.is_method else c.params


def _on_instance(c: Changed) -> bool:
    """A method called on a fresh instance (a constructor is called through its class instead)."""
    return c.is_method and bool(c.params) and c.params[0].name == "self" and c.name != "__init__"


def doctests(c: Changed) -> list[Input]:
    """The docstring's examples: doctests (`>>> f(2)` / `4`), and the informal ones docstrings also use
    (`f(2) -> 4`, `f(2) => 4`, `f(2) == 4`, `f(2)  # returns 4`), when call and value are literals. The
    module's other documentation (its docstring, documentation strings, class docstrings) adds the doctests
    that call the callable by name, with the examples before them in the same string (their setup)."""
    examples = _doctest_examples(c.docstring)
    if not examples and not c.is_method:
        examples = informal_examples(c.name, c.docstring, tuple(p.name for p in call_params(c)))
    out = [Input(c.key, "doctest", doctest=tuple(examples))] if examples else []
    for doc in c.other_docs:
        found = _doctest_examples(doc)
        calls = [i for i, (src, _) in enumerate(found) if calls_by_name(c.name, src, in_class(c.qualname))]
        if calls:  # another function's examples are setup here: run, not compared
            end = calls[-1] + 1
            start = max(0, end - MAX_EXAMPLES)
            report = tuple(i - start for i in calls if i >= start)
            out.append(Input(c.key, "doctest", doctest=tuple(found[start:end]), report=report))
    return out


MAX_EXAMPLES = 20  # examples of one docstring run for one callable


def nesting(c: Changed) -> list[Input]:
    """A context manager that takes no required argument, used inside itself (`with cm(): with cm():`),
    the project's module state observed before, in and after each block (see the harness): one that
    sets state on entry must put back what it found on exit, or the outer block runs with the wrong
    state after the inner one ends. Run whether or not the tests reach it (they rarely nest it)."""
    if not c.is_context_manager or c.is_async or c.is_method or "<locals>" in c.qualname:
        return []
    if any(not p.has_default and p.kind in ("positional", "keyword") for p in call_params(c)):
        return []
    return [Input(c.key, "nesting", nesting=True)]


def _doctest_examples(doc: str) -> list[tuple[str, str]]:
    try:
        return [(e.source.strip(), e.want) for e in doctest.DocTestParser().get_examples(doc)]
    except ValueError:
        return []


_SAYS = re.compile(
    r"^\s*(?:->|==>|=>|➞|→|==|#\s*(?:returns?|=>|->|==)?|should\s+return|returns?)\s*:?\s*(.+?)\s*$"
)
# "For s = 'ab', c = 'a' the result should be ('b', False)", "Input: arr = [1, 2], k = 1"
_GIVEN = re.compile(
    r"^\s*(?:for|input\s*:)\s+(?P<args>.+?)\s*(?:,?\s*(?:the\s+)?(?:output|result)\s+"
    r"(?:should\s+be|will\s+be|is)\s*:?\s*(?P<value>.+?))?\s*$",
    re.IGNORECASE,
)
_OUTPUT = re.compile(r"^\s*output\s*:\s*(.+?)\s*$", re.IGNORECASE)


def informal_examples(name: str, docstring: str, params: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """A docstring's informal examples, as (call, expected repr) pairs, when call and value are literals:
    `name(literals) <says> literal` lines (`->`, `=>`, `==>`, `==`, `# returns`; `== 1 + 9 = 10` expects the
    last value), and, given the parameter names, `For a = 1, b = 2 the result should be 3` or an
    `Input: a = 1, b = 2` line with an `Output: 3` line below it."""
    out: list[tuple[str, str]] = []
    lines = docstring.splitlines()
    for k, line in enumerate(lines):
        found = _call_line(name, line) or _given_line(name, params, line, lines[k + 1 : k + 4])
        if found is not None:
            out.append(found)
    return out


def _call_line(name: str, line: str) -> tuple[str, str] | None:
    start = line.find(name + "(")
    if start < 0 or (start and (line[start - 1].isalnum() or line[start - 1] in "_.")):
        return None
    end = _closing(line, start + len(name))
    if end is None:
        return None
    call, rest = line[start : end + 1], line[end + 1 :]
    m = _SAYS.match(rest)
    if not m or not _literal_call(call, name):
        return None
    value = _expected(m.group(1))
    return (call, value) if value is not None else None


def _given_line(name: str, params: tuple[str, ...], line: str, below: list[str]) -> tuple[str, str] | None:
    m = _GIVEN.match(line)
    if not params or not m:
        return None
    call = f"{name}({m.group('args').rstrip(' ,.:;')})"
    try:
        node = pysyntax.parse(call, mode="eval").body
    except SyntaxError:
        return None
    given = [k.arg for k in node.keywords] if isinstance(node, ast.Call) and not node.args else []
    if not given or not set(given) <= set(params) or not _literal_call(call, name):
        return None
    said = m.group("value")
    if said is None:  # the value on an `Output:` line below
        nxt = next((x for x in below if x.strip()), "")
        o = _OUTPUT.match(nxt)
        said = o.group(1) if o else None
    value = _expected(said) if said is not None else None
    return (ast.unparse(node), value) if value is not None else None


def _expected(text: str) -> str | None:
    """A stated result's repr: a literal (`true`/`null` too), `1 + 9 = 10`'s last value; no comment, stop."""
    candidates = [text.rstrip(".,;"), text.split(" #", 1)[0].rstrip(".,;")]
    if " = " in text:
        candidates.append(text.rsplit(" = ", 1)[1].rstrip(".,;"))
    for value in candidates:
        value = {"true": "True", "false": "False", "null": "None", "none": "None"}.get(value.strip(), value)
        try:
            return repr(pysyntax.literal_eval(value))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None


def _closing(line: str, open_at: int) -> int | None:
    for i, ch, depth in brackets(line[open_at:]):
        if ch in ")]}" and depth == 0:
            return open_at + i
    return None


def _literal_call(text: str, name: str) -> bool:
    try:
        node = pysyntax.parse(text, mode="eval").body
    except SyntaxError:
        return False
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name):
        return False
    try:
        for a in [*node.args, *(k.value for k in node.keywords)]:
            pysyntax.literal_eval(a)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return all(not isinstance(a, ast.Starred) for a in node.args)


# ---------------------------------------------------------------- strategies from annotations


def _strategy(node: ast.expr | None) -> Any:
    """A Hypothesis strategy for an annotation made of builtins and typing generics; None if unknown."""
    from hypothesis import strategies as st

    if node is None:
        return None
    if isinstance(node, ast.Constant) and node.value is None:
        return st.none()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
        try:
            return _strategy(pysyntax.parse(node.value, mode="eval").body)
        except SyntaxError:
            return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | Y
        parts = [_strategy(node.left), _strategy(node.right)]
        return st.one_of(*parts) if all(p is not None for p in parts) else None
    name = _name(node.value if isinstance(node, ast.Subscript) else node)
    simple = {
        "int": st.integers(min_value=-3, max_value=60),
        "float": st.one_of(
            st.integers(-20, 100).map(float),
            st.floats(min_value=-100, max_value=100, allow_nan=False, allow_subnormal=False),
        ),
        "str": st.text(alphabet="abc xyz019", max_size=6),
        "bool": st.from_type(bool),
        "bytes": st.binary(max_size=6),
        "None": st.none(),
    }
    if not isinstance(node, ast.Subscript):
        if name in simple:
            return simple[name]
        if name in ("list", "List", "Sequence", "Iterable", "Collection"):
            return st.lists(st.integers(-3, 60), max_size=6)
        return None
    inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    subs = [_strategy(x) for x in inner if not (isinstance(x, ast.Constant) and x.value is Ellipsis)]
    if any(s is None for s in subs) or not subs:
        return None
    if name in ("list", "List", "Sequence", "Iterable", "Collection", "MutableSequence"):
        return st.lists(subs[0], max_size=6)
    if name in ("set", "Set", "frozenset", "FrozenSet", "AbstractSet"):
        return st.sets(subs[0], max_size=6)
    if name in ("tuple", "Tuple"):
        return (
            st.lists(subs[0], max_size=4).map(tuple)
            if len(inner) == 2 and _is_ellipsis(inner[1])
            else st.tuples(*subs)
        )
    if name in ("dict", "Dict", "Mapping", "MutableMapping") and len(subs) == 2:
        return st.dictionaries(subs[0], subs[1], max_size=4)
    if name == "Optional":
        return st.one_of(st.none(), subs[0])
    if name == "Union":
        return st.one_of(*subs)
    return None


def _is_ellipsis(x: ast.expr) -> bool:
    return isinstance(x, ast.Constant) and x.value is Ellipsis


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _annotation(p: Param) -> ast.expr | None:
    if p.annotation is None:
        return None
    try:
        return pysyntax.parse(p.annotation, mode="eval").body
    except SyntaxError:
        return None


def hypothesis_inputs(c: Changed, n: int, seed: int = 0) -> list[Input]:
    """Up to n inputs drawn from the parameters' type hints, deterministically (derandomized)."""
    try:
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import strategies as st
    except ImportError:
        return []
    params = [p for p in call_params(c) if p.kind == "positional"]
    required = [p for p in params if not p.has_default]
    strategies = [_strategy(_annotation(p)) for p in required]
    if not required or any(s is None for s in strategies):
        return []
    drawn: list[tuple[Any, ...]] = []

    @settings(
        max_examples=n,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.tuples(*strategies))
    def collect(values: tuple[Any, ...]) -> None:
        drawn.append(values)

    collect()
    return _as_inputs(c, "hypothesis", drawn, n)


def _literal(value: Any) -> str | None:
    if isinstance(value, Built):
        return value.text
    text = repr(value)
    try:
        return text if pysyntax.literal_eval(text) == value else None
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _as_inputs(c: Changed, origin: str, rows: list[tuple[Any, ...]], n: int) -> list[Input]:
    out: list[Input] = []
    seen: set[tuple[str, ...]] = set()
    for row in rows:
        reprs = [_literal(v) for v in row]
        if any(r is None for r in reprs):
            continue
        key = tuple(r for r in reprs if r is not None)
        if key in seen:
            continue
        seen.add(key)
        builds = sorted({(k.name, k.path) for v in row if isinstance(v, Built) for k in v.classes})
        out.append(Input(c.key, origin, args=key, instance=_on_instance(c), builds=tuple(builds)))
        if len(out) >= n:
            break
    return out


def boundary_inputs(c: Changed, n: int, classes: dict[str, ProjectClass] | None = None) -> list[Input]:
    """Boundary values from the code's integer literals (c-1, c, c+1) and small edge cases per type; for
    a parameter that takes a project class (by hint or by name), a few of its instances."""
    required = [p for p in call_params(c) if p.kind == "positional" and not p.has_default]
    if not required:
        return [Input(c.key, "boundary", instance=_on_instance(c))]  # nothing to vary: one call
    ints = sorted({v + d for v in int_literals(c) for d in (-1, 0, 1)} | {0, 1, 2, 10})
    per_param: list[list[Any]] = []
    for p in required:
        node = _annotation(p)
        name = _name(node.value if isinstance(node, ast.Subscript) else node) if node is not None else ""
        built = values(p, classes or {})
        if built:
            per_param.append(built)
        elif node is not None and _optional(node):
            per_param.append([None])  # `X | None`, `Optional[X]`: None is the value every caller may pass
        elif name in ("Any", "object"):
            per_param.append(["", "a", 0, None])  # anything goes: a few of each kind
        elif name in ("", "int"):
            per_param.append(ints)
        elif name == "float":
            per_param.append([0.0, 1.0, 2.5, -1.0])
        elif name == "str":
            per_param.append(["", "a", "abc"])
        elif name == "bool":
            per_param.append([False, True])
        elif name in ("list", "List", "Sequence", "Iterable"):
            elem = _strategy_elem_name(p)
            per_param.append(
                [[], [1.0], [1.0, 2.0], [4.0, 1.0, 2.0]]
                if elem == "float"
                else [[], ["a"], ["a", "b"], ["b", "a", "c"]]
                if elem == "str"
                else [[], [1], [1, 2], [3, 1, 2]]
            )
        else:
            return []
    rows = list(zip(*per_param, strict=False)) if len(per_param) > 1 else []
    rows += list(itertools.islice(itertools.product(*per_param), n))
    return _as_inputs(c, "boundary", rows, n)


def _optional(node: ast.expr) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return any(isinstance(x, ast.Constant) and x.value is None for x in (node.left, node.right)) or (
            _optional(node.left) or _optional(node.right)
        )
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _optional(pysyntax.parse(node.value, mode="eval").body)
        except SyntaxError:
            return False
    return isinstance(node, ast.Subscript) and _name(node.value) == "Optional"


def _strategy_elem_name(p: Param) -> str:
    node = _annotation(p)
    if isinstance(node, ast.Subscript):
        return _name(node.slice) if not isinstance(node.slice, ast.Tuple) else ""
    return ""


# ---------------------------------------------------------------- calls the model proposes

PROPOSAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "calls": {
            "type": "array",
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {
                    "args": {"type": "array", "maxItems": 6, "items": {"type": "string", "maxLength": 80}}
                },
                "required": ["args"],
            },
        }
    },
    "required": ["calls"],
}

_PROPOSE = (
    "Propose up to 3 example calls of this Python function that exercise its edge cases. Give each call's "
    "positional arguments as Python literals (numbers, strings, lists, dicts, tuples, True/False/None), "
    'as JSON: {{"calls": [{{"args": ["10"]}}]}}.\n\n<untrusted>\n```python\n{source}\n```\n</untrusted>'
)


def model_inputs(c: Changed, model: Model, n: int = 3, language: str = "") -> tuple[list[Input], float]:
    """Up to n calls proposed by the model; arguments that are not literals are dropped. (inputs, seconds)"""
    required = [p for p in call_params(c) if p.kind == "positional" and not p.has_default]
    positional = [p for p in call_params(c) if p.kind == "positional"]
    system = Message("system", prompts.load("behaviour_inputs") + language_instruction(language))
    msg = Message("user", _PROPOSE.format(source=c.head_source[:3000]))
    try:
        answer = ask_json(model, [system, msg], PROPOSAL_SCHEMA, max_tokens=160)
    except Exception:  # noqa: BLE001 (a model that fails proposes nothing)
        return [], 0.0
    data, res = answer.data, answer.completion
    if data is None:
        return [], 0.0
    out: list[Input] = []
    for call in (data.get("calls") or [])[:n] if isinstance(data, dict) else []:
        args = call.get("args") if isinstance(call, dict) else None
        if not isinstance(args, list) or not (len(required) <= len(args) <= len(positional)):
            continue
        reprs = []
        for a in args:
            try:
                reprs.append(_literal(pysyntax.literal_eval(str(a))))
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                reprs.append(None)
        if all(r is not None for r in reprs):
            out.append(
                Input(c.key, "model", args=tuple(r for r in reprs if r is not None), instance=_on_instance(c))
            )
    return out, res.seconds


def plan(
    targets: list[Changed],
    *,
    max_calls: int,
    model: Callable[[], Model] | None = None,
    model_calls: int = 4,
    language: str = "",
    classes: dict[str, ProjectClass] | None = None,
    deadline: float | None = None,
) -> Plan:
    """Each target's doctest, Hypothesis, boundary and model inputs; past `deadline`, in `Plan.late`."""
    out = Plan()
    asked = 0
    for n, c in enumerate(targets):
        if deadline is not None and time.monotonic() > deadline:
            out.late = targets[n:]
            break
        found = doctests(c) + nesting(c)
        why = callable_ok(c)
        if why is None:
            typed_c = with_example_types(c, found)
            edges = boundary_inputs(typed_c, max(1, max_calls // 2), classes)
            typed = hypothesis_inputs(typed_c, max(1, max_calls - len(edges)))
            found += edges
            # the model proposes calls of functions with parameters; a class's constructor calls are
            # its doctests and edge values (a model round per edited class body costs more than it finds)
            if model is not None and asked < model_calls and not typed and call_params(c) and not c.is_class:
                asked += 1
                found += model_inputs(c, model(), language=language)[0]
            found += typed
        if not found:
            out.skipped.append((c, why or "no inputs: parameter types with no literal values, no doctest"))
        out.inputs += _dedupe(found)[:max_calls]
    return out


def with_example_types(c: Changed, examples: list[Input]) -> Changed:
    """`c` with a type hint on each unhinted parameter that its docstring examples pass one literal type
    (`f([1, 2]) -> 2` makes `xs` a `list[int]`), so edge values and Hypothesis draw values of that type
    instead of guessing. Only inputs are drawn from it: the judge still sees the parameter as unhinted."""
    params = call_params(c)
    seen: dict[str, set[str]] = {}
    for inp in examples:
        for src, _ in inp.doctest:
            try:
                node = pysyntax.parse(src, mode="eval").body
            except SyntaxError:
                continue
            if not (isinstance(node, ast.Call) and _name(node.func) == c.name):
                continue
            given = list(zip((p.name for p in params), node.args, strict=False))
            given += [(k.arg, k.value) for k in node.keywords if k.arg]
            for name, arg in given:
                try:
                    hint = _type_of(pysyntax.literal_eval(arg))
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    continue
                if hint:
                    seen.setdefault(name, set()).add(hint)
    for h in seen.values():
        if "list" in h and len(h) > 1:
            h.discard("list")  # an empty list says nothing about its elements
        for narrow, wide in (("int", "float"), ("list[int]", "list[float]")):
            if {narrow, wide} <= h:
                h.discard(narrow)  # ints among floats: floats
    hints = {name: next(iter(h)) for name, h in seen.items() if len(h) == 1}
    if not any(p.annotation is None and p.name in hints for p in params):
        return c
    new = tuple(
        replace(p, annotation=hints[p.name])
        if p.annotation is None and p.name in hints and p in params
        else p
        for p in c.params
    )
    return replace(c, params=new)


def _type_of(value: Any) -> str:
    """A type hint for a literal the boundary values and strategies know ('' for others)."""
    simple = {bool: "bool", int: "int", float: "float", str: "str"}
    if type(value) in simple:
        return simple[type(value)]
    if isinstance(value, list):
        kinds = {_type_of(v) for v in value}
        if len(kinds) == 1 and next(iter(kinds)) in ("int", "float", "str"):
            return f"list[{next(iter(kinds))}]"
        return "list[float]" if kinds == {"int", "float"} else "list" if not value else ""
    return ""


def _dedupe(inputs: list[Input]) -> list[Input]:
    seen: set[tuple[Any, ...]] = set()
    out = []
    for i in inputs:
        k = (i.args, i.kwargs, i.doctest, i.instance)
        if k not in seen:
            seen.add(k)
            out.append(i)
    return out
