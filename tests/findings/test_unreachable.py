"""Code a change leaves behind an exit: found from the AST, only where the change put it there."""

from __future__ import annotations

import textwrap

import pytest

from bot.config import ScannersConfig
from bot.findings.scanners import ChangedFile, introduced, run
from bot.findings.scanners import unreachable as u

BASE = textwrap.dedent(
    """\
    class ParserError(ValueError):
        def __str__(self):
            try:
                return self.args[0] % self.args[1:]
            except (TypeError, IndexError):
                return super().__str__()

        def __repr__(self):
            return "ParserError(%s)" % str(self)
    """
)
# the `def __repr__` one level too deep: inside `__str__`, after the try whose every branch returns
HEAD = BASE.replace(
    "    def __repr__(self):\n        return", "        def __repr__(self):\n            return"
)


def _added(base: str, head: str) -> frozenset[int]:
    import difflib

    sm = difflib.SequenceMatcher(a=base.splitlines(), b=head.splitlines(), autojunk=False)
    return frozenset(
        n for tag, _, _, j1, j2 in sm.get_opcodes() if tag != "equal" for n in range(j1 + 1, j2 + 1)
    )


def test_a_method_indented_into_the_one_above_after_its_returns_is_unreachable() -> None:
    f = ChangedFile("p.py", HEAD, BASE, _added(BASE, HEAD))
    (found,) = introduced(u.scan, [f], ScannersConfig())
    assert (found.line, found.end_line, found.severity, found.category) == (3, 9, "medium", "bug")
    assert found.rule_id == "unreachable-code" and found.cwe == "CWE-561"
    assert "`def __repr__` at line 8" in found.message and "a `try` every branch" in found.message
    assert introduced(u.scan, [ChangedFile("p.py", BASE, HEAD, _added(HEAD, BASE))], ScannersConfig()) == []


@pytest.mark.parametrize(
    ("body", "dead"),
    [
        ("return 1\nx = 2", True),
        ("raise ValueError\nx = 2", True),
        ("if a:\n    return 1\nelse:\n    raise E\nx = 2", True),
        ("if a:\n    return 1\nx = 2", False),  # no else: the code after runs when `a` is false
        ("try:\n    return 1\nexcept E:\n    pass\nx = 2", False),  # a handler falls through
        ("try:\n    g()\nfinally:\n    return 1\nx = 2", True),
        ("with m:\n    return 1\nx = 2", False),  # a context manager may swallow: not counted
        ("while a:\n    break\nx = 2", False),
        ("raise NotImplementedError\nyield", False),  # the generator idiom
        ("return 1\npass", False),
        ("for i in a:\n    continue\n    x = 2", True),
        ("return\ndef g():  # pragma: no cover\n    return a", False),  # dead on purpose, and said so
    ],
)
def test_what_counts_as_leaving_the_block(body: str, dead: bool) -> None:
    src = "def f(a):\n" + textwrap.indent(body, "    ") + "\n"
    assert bool(u.scan({"m.py": src}, None, ScannersConfig())) == dead  # type: ignore[arg-type]


def test_dead_code_in_a_handler_or_a_case_is_reported_once() -> None:
    handler = "def f(a):\n    try:\n        g()\n    except E:\n        return 1\n        x = 2\n"
    case = "def f(a):\n    match a:\n        case 1:\n            return 1\n            x = 2\n"
    for src in (handler, case):
        assert len(u.scan({"m.py": src}, None, ScannersConfig())) == 1  # type: ignore[arg-type]


def test_code_already_dead_at_base_is_not_the_changes_and_other_languages_are_left_alone() -> None:
    old = "def f():\n    return 1\n    x = 2\n"
    new = old + "\n\ndef g():\n    return 3\n"
    assert introduced(u.scan, [ChangedFile("m.py", new, old, frozenset({4, 5, 6}))], ScannersConfig()) == []
    assert u.scan({"m.js": "function f() { return 1; x = 2; }"}, None, ScannersConfig()) == []  # type: ignore[arg-type]
    assert u.scan({"m.py": "def f(:\n"}, None, ScannersConfig()) == []  # type: ignore[arg-type]


def test_the_scanner_runs_with_the_others_and_can_be_turned_off() -> None:
    f = ChangedFile("p.py", HEAD, BASE, _added(BASE, HEAD))
    off = {"secrets": False, "bandit": False, "patterns": False}
    on = run([f], ScannersConfig(**off))
    assert [x.rule_id for x in on.findings] == ["unreachable-code"] and not on.notes
    assert run([f], ScannersConfig(**off, unreachable=False)).findings == ()
