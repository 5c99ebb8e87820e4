"""Expressions the model writes from a test's own code, aimed at the change: where the tests' calls of a
changed callable behave the same at base and head and its inputs are objects no literal builds (a token
tree, a configured app, `self` alone), the model is shown the callable's diff and one test that reaches
it, and writes up to three expressions in that test's terms (`sqlparse.parse("create table t as select
count(x) from y")[0]`). Each is evaluated at base and head after the test module's own imports
(prereview_steer.py, in the sandbox, like the tests); one that did not run the changed callable is
dropped, so every difference left is the changed code's. Differences are judged as steered ones
(rules.py kind "steered", then the change's words).

The expressions are the model's code, built from the change's untrusted text: they run only in the
sandbox, next to the change's code; on the host they are parsed (`ast`), never run.
"""

from __future__ import annotations

import ast
import difflib
import functools
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from ... import prompts, pysyntax
from ...findings.language import instruction as language_instruction
from ...models import Model
from ...models.answer import ask_object
from .callables import Changed, Reader
from .compare import Call
from .generate import Input

MAX_EXPRESSIONS = 3
MAX_TEST = 1500  # characters of the test shown
MAX_EXPRESSION = 300
MAX_TESTS = 40  # tests reaching the callable read to choose one from

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "expressions": {
            "type": "array",
            "maxItems": MAX_EXPRESSIONS,
            "items": {"type": "string", "maxLength": MAX_EXPRESSION},
        }
    },
    "required": ["expressions"],
}

_ASK = (
    "A function changed, `{name}`:\n<untrusted>\n```python\n{signature}\n```\nThe diff:\n"
    "```diff\n{diff}\n```\n</untrusted>\n\nThis test of the project "
    "runs `{name}` and passes both before and after the change:\n<untrusted>\n```python\n{imports}\n\n"
    "{test}\n```\n</untrusted>\n\n{template}Write up to {n} Python expressions in this test's terms (the "
    "names it imports, literal inputs; or `{top}` itself when its arguments can be written as literals) "
    "whose value would differ between the version before and the version after the change: each must "
    "make `{name}` run on an input that takes the changed lines. One expression each: no statements, no "
    'assert, no variables, no `self` or fixtures. Answer as JSON: {{"expressions": ["..."]}}.'
)

# names an expression may not use: it only computes a value (it runs in the sandbox all the same)
_REFUSED = frozenset(
    {"exec", "eval", "compile", "open", "__import__", "input", "breakpoint", "exit", "quit", "globals"}
)


def test_of(test_id: str, read: Reader) -> tuple[str, str] | None:
    """(the test module's import statements, the test function's source) for a pytest id, or None when
    the file or function cannot be read (relative imports are left out: the harness imports by name)."""
    return _test_in(test_id, _parsed_by(read))


def _parsed_by(read: Reader) -> Callable[[str], tuple[str, ast.Module] | None]:
    """`read` with each Python file read and parsed once: (text, tree), or None."""

    @functools.cache
    def parsed(path: str) -> tuple[str, ast.Module] | None:
        text = read(path) if path.endswith(".py") else None
        if text is None:
            return None
        try:
            return text, pysyntax.parse(text)
        except SyntaxError:
            return None

    return parsed


def _test_in(test_id: str, parsed: Callable[[str], tuple[str, ast.Module] | None]) -> tuple[str, str] | None:
    path, _, rest = test_id.partition("::")
    parts = [p for p in rest.split("[", 1)[0].split("::") if p]
    got = parsed(path) if parts else None
    if got is None:
        return None
    text, tree = got
    imports = [
        ast.get_source_segment(text, n) or ""
        for n in tree.body
        if isinstance(n, ast.Import) or (isinstance(n, ast.ImportFrom) and not n.level)
    ]
    body: list[ast.stmt] = tree.body
    node: ast.AST | None = None
    for part in parts:
        node = next(
            (n for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part), None
        )
        if node is None:
            return None
        body = node.body if isinstance(node, ast.ClassDef) else []
    source = ast.get_source_segment(text, node) if isinstance(node, ast.FunctionDef) else None
    if not source:
        return None
    return "\n".join(i for i in imports if i), source[:MAX_TEST]


def expression(text: str) -> str | None:
    """The expression in the model's line: as written, or the test of an `assert`, or the value of an
    assignment (what small models write when asked for an expression); None when it is none of those
    or not `usable`."""
    text = text.strip()
    try:
        node = pysyntax.parse(text).body
    except (SyntaxError, ValueError):
        return None
    if len(node) != 1:
        return None
    part = _expression_of(node[0])
    got = ast.get_source_segment(text, part) if part is not None else None
    return got if got and usable(got) else None


def _expression_of(stmt: ast.AST) -> ast.expr | None:
    """A statement's expression: a bare expression's, an assert's test, an assignment's value; else None."""
    if isinstance(stmt, (ast.Expr, ast.Assign)):
        return stmt.value
    return stmt.test if isinstance(stmt, ast.Assert) else None


def usable(text: str) -> bool:
    """A single expression that only computes (none of `_REFUSED`, no dunder attribute, no lambda)."""
    try:
        tree = pysyntax.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        return False
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id in _REFUSED:
            return False
        if isinstance(n, ast.Attribute) and n.attr.startswith("__"):
            return False
        if isinstance(n, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
            return False
    return True


def chosen_test(c: Changed, base_calls: Sequence[Call], read: Reader) -> tuple[str, tuple[str, str]] | None:
    """The test to write expressions from, among the tests whose calls reached `c` at base (any of them:
    it is only a template of the project's API, its own inputs are not compared; one the change deletes
    cannot be read at head), those in a test file named after its module first, `grouping.py` ->
    `tests/test_grouping.py`, at most MAX_TESTS read): one whose code names the callable (or its class),
    else one in such a file; among those, one that needs no `self` (a test class's helpers are not in
    scope), then the shortest. (test id, (imports, source)), or None when none can be read."""
    stem = c.path.rsplit("/", 1)[-1].removesuffix(".py").strip("_")

    def near(test_id: str) -> bool:
        return bool(stem) and stem in test_id.split("::", 1)[0].rsplit("/", 1)[-1]

    ids = list(
        dict.fromkeys(
            x.origin for x in base_calls if x.callable == c.key and "::" in x.origin and not x.variant
        )
    )
    ids.sort(key=lambda t: not near(t))  # stable: run order otherwise
    names = {c.name, c.qualname.split(".")[0]}
    parsed = _parsed_by(read)  # tests of one file share its one read and parse
    found = [(t, got) for t in ids[:MAX_TESTS] if (got := _test_in(t, parsed)) is not None]
    if not found:
        return None

    def rank(f: tuple[str, tuple[str, str]]) -> tuple[int, bool, int]:
        source = f[1][1]
        named = 0 if any(n in source for n in names) else 1 if near(f[0]) else 2
        return named, "self." in source, len(source)

    return min(found, key=rank)


def template(source: str, imports: str) -> str | None:
    """The test's first expression that calls one of the names its module imports (an assignment's
    value, an assert's test, a bare call): how the project's API reaches the callable, for the model to
    vary (`sqlparse.parse(s)[0]`). None when it has none (pytest's own helpers do not count)."""
    try:
        imported = {
            (a.asname or a.name).split(".")[0]
            for n in pysyntax.parse(imports).body
            if isinstance(n, (ast.Import, ast.ImportFrom))
            for a in n.names
        } - {"pytest", "unittest", "mock"}
        text = textwrap.dedent(source)
        fn = pysyntax.parse(text).body[0]
    except (SyntaxError, ValueError, IndexError):
        return None
    for stmt in ast.walk(fn):
        node = _expression_of(stmt)
        if node is None:
            continue
        for call in ast.walk(node):
            root = call.func if isinstance(call, ast.Call) else None
            while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and root.id in imported:
                return ast.get_source_segment(text, node)
    return None


def _signature(c: Changed) -> str:
    """The callable's `def` as written at head, inside its class (`class C:` above a method's)."""
    owner = c.qualname.rsplit(".", 1)[0] if "." in c.qualname else ""
    text = c.signature.strip()
    return f"class {owner}:\n    {text}\n        ..." if owner and "<locals>" not in owner else text


def propose(
    c: Changed, test_id: str, test: tuple[str, str], model: Model, language: str = ""
) -> tuple[list[Input], float]:
    """The model's expressions for `c` from one test, as inputs (at most MAX_EXPRESSIONS), and seconds."""
    imports, source = test
    diff = "\n".join(
        difflib.unified_diff(c.base_source.splitlines(), c.head_source.splitlines(), lineterm="", n=2)
    )
    shape = template(source, imports)
    prompt = _ASK.format(
        diff="\n".join(diff.splitlines()[2:])[:2000],
        name=c.qualname,
        signature=_signature(c),
        imports=imports[:800],
        test=source,
        top=c.qualname.split(".")[0],
        n=MAX_EXPRESSIONS,
        template=f"The test computes `{shape[:300]}`: vary its inputs. " if shape else "",
    )
    system = prompts.load("behaviour_steer") + language_instruction(language)
    data, seconds = ask_object(model, system, prompt, SCHEMA, max_tokens=240)
    rows = data.get("expressions")
    out: list[Input] = []
    for text in rows if isinstance(rows, list) else []:
        found = expression(text) if isinstance(text, str) else None
        if found is not None:
            got = Input(c.key, test_id, probe=found, imports=imports)
            if got not in out:
                out.append(got)
    return out[:MAX_EXPRESSIONS], seconds
