"""ast.parse that survives CPython 3.11's shared AST recursion counter (gh-106905)."""

from __future__ import annotations

import ast

import pytest

from bot import pysyntax


def test_a_recursion_depth_mismatch_from_another_thread_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    real, calls = ast.parse, []

    def flaky(source: str, mode: str = "exec") -> ast.AST:
        calls.append(source)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=159, after=23)")
        return real(source, mode=mode)

    monkeypatch.setattr(ast, "parse", flaky)
    assert isinstance(pysyntax.parse("x = 1"), ast.Module) and len(calls) == 2
    assert pysyntax.literal_eval(" [1, 'a']") == [1, "a"]


def test_other_errors_are_the_callers(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SyntaxError):
        pysyntax.parse("def (")
    with pytest.raises(ValueError):
        pysyntax.literal_eval("__import__('os')")

    def broken(source: str, mode: str = "exec") -> ast.AST:
        raise SystemError("something else")

    monkeypatch.setattr(ast, "parse", broken)
    with pytest.raises(SystemError, match="something else"):
        pysyntax.parse("x")
