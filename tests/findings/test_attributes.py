"""A `self.x` its class never defines, read on a line the change adds: found from the AST, only where the
whole class is known."""

from __future__ import annotations

import ast
import difflib
import textwrap

import pytest

from bot.config import ScannersConfig
from bot.findings.scanners import ChangedFile, introduced, run
from bot.findings.scanners import attributes as a

# dateutil af20fd4, put back: the month lives at `self[self.mstridx]`; `self.month` does not exist
BASE = textwrap.dedent(
    """\
    class _ymd(list):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.mstridx = None

        @property
        def has_month(self):
            return self.mstridx is not None

        def could_be_day(self, value):
            if not self.has_month:
                return 1 <= value <= 31
            month = self[self.mstridx]
            return 1 <= value <= monthrange(2000, month)[1]
    """
)
HEAD = BASE.replace(
    "        month = self[self.mstridx]\n        return 1 <= value <= monthrange(2000, month)[1]\n",
    "        return 1 <= value <= monthrange(2000, self.month)[1]\n",
)


def _added(base: str, head: str) -> frozenset[int]:
    sm = difflib.SequenceMatcher(a=base.splitlines(), b=head.splitlines(), autojunk=False)
    return frozenset(
        n for tag, _, _, j1, j2 in sm.get_opcodes() if tag != "equal" for n in range(j1 + 1, j2 + 1)
    )


def test_an_attribute_the_class_never_defines_is_found_on_the_added_line() -> None:
    assert HEAD != BASE
    (found,) = introduced(a.scan, [ChangedFile("p.py", HEAD, BASE, _added(BASE, HEAD))], ScannersConfig())
    assert (found.line, found.severity, found.category, found.rule_id) == (13, "medium", "bug", a.RULE)
    assert "`self.month`" in found.message and "`_ymd`" in found.message and "AttributeError" in found.message
    assert introduced(a.scan, [ChangedFile("p.py", BASE, HEAD, _added(HEAD, BASE))], ScannersConfig()) == []


INIT = "    def __init__(self):\n        self.n = 0\n"


def _reads(code: str) -> list[str]:
    return [n.attr for n, _ in a.missing(ast.parse(textwrap.dedent(code)), "tests/test_m.py")]


@pytest.mark.parametrize(
    ("code", "found"),
    [
        (f"class A:\n{INIT}    def f(self):\n        return self.x\n", ["x"]),
        ("class Comparable:\n    def f(self):\n        return self.x\n", []),  # no __init__: a mixin's way
        ("class TestA:\n    def test_f(self):\n        return self.x\n", ["x"]),  # a test class (test file)
        ("class A:\n    x = 1\n    def f(self):\n        return self.x\n", []),
        ("class A:\n    def g(self):\n        self.x = 1\n    def f(self):\n        return self.x\n", []),
        (
            "class A:\n    @property\n    def x(self):\n"
            "        return 1\n    def f(self):\n        return self.x\n",
            [],
        ),
        ("class A(list):\n    def f(self):\n        return self.append\n", []),  # a built-in base's
        ("class A(list):\n    def f(self):\n        return self.push\n", ["push"]),
        ("class A(B):\n    def f(self):\n        return self.x\n", []),  # B is not in the file
        (f"class B:\n{INIT}class A(B):\n    def f(self):\n        return self.x\n", ["x"]),
        (
            "class A:\n    def f(self):\n        return self.x\nclass C(A):\n    x = 1\n",
            [],
        ),  # a subclass has it
        ("class FooMixin:\n    def f(self):\n        return self.x\n", []),
        ("class BaseThing:\n    def f(self):\n        return self.x\n", []),
        (
            "class A:\n    def f(self):\n        return self.x\n"
            "    def g(self):\n        raise NotImplementedError\n",
            [],
        ),
        (
            "class A:\n    def __getattr__(self, n):\n        return 1\n"
            "    def f(self):\n        return self.x\n",
            [],
        ),
        ("class A:\n    def f(self):\n        setattr(self, n, 1)\n        return self.x\n", []),
        ("class A:\n    def f(self):\n        return getattr(self, 'x', None) or self.x\n", []),  # spelled
        (
            "class A:\n    def f(self):\n        try:\n"
            "            return self.x\n        except AttributeError:\n"
            "            return None\n",
            [],
        ),
        ("class A(metaclass=M):\n    def f(self):\n        return self.x\n", []),
        ("class Meta(type):\n    def f(cls):\n        return cls.flags\n", []),  # sqlparse's LexerMeta
        ("@decorate\nclass A:\n    def f(self):\n        return self.x\n", []),
        ("@dataclass\nclass A:\n    x: int\n    def f(self):\n        return self.x + self.y\n", ["y"]),
        ("class A:\n    @staticmethod\n    def f(self):\n        return self.x\n", []),
        ("class A:\n    def f(self):\n        self = other\n        return self.x\n", []),
        ("class A:\n    def f(self):\n        return self.__class__\n", []),  # dunder
        ("class A:\n    def f(self):\n        return self.x\nA.x = 1\n", []),  # stored from outside
        (
            f"class A:\n{INIT}    def f(self):\n        return self.x\ndef g(r):\n    r.x = 'x'\n",
            ["x"],
        ),  # another object
        (
            "class A:\n    def f(self):\n        class B:\n            y = 1\n\n            def g(self):\n"
            "                return self.y\n\n        return 1\n",
            [],
        ),  # the nested class's own self: judged against B, not A
    ],
)
def test_only_a_wholly_known_class_is_judged(code: str, found: list[str]) -> None:
    assert _reads(code) == found


def test_the_scanner_runs_with_the_others_and_can_be_turned_off() -> None:
    f = ChangedFile("p.py", HEAD, BASE, _added(BASE, HEAD))
    off = {"secrets": False, "bandit": False, "patterns": False}
    assert [x.rule_id for x in run([f], ScannersConfig(**off)).findings] == [a.RULE]
    assert run([f], ScannersConfig(**off, attributes=False)).findings == ()


def test_a_class_that_reads_many_names_it_never_defines_is_a_partner_not_a_typo() -> None:
    body = "    def f(self):\n        return self.peek() + self.prefix(2) + self.get_mark()\n"
    scanner = f"class Scanner:\n{INIT}{body}"
    assert _reads(scanner) == []  # PyYAML's Scanner: Reader, combined with it in the loaders, has them
    assert _reads(scanner.replace(" + self.get_mark()", "")) == ["peek", "prefix"]
