"""Which changed files the behaviour comparison covers: Python only for now; the JavaScript, TypeScript and
Go sources it does not compare are counted for the note that says so."""

from __future__ import annotations

from ...change.diff import Diff, is_test_path

OTHER_SOURCES = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".go")


def other_language_sources(diff: Diff) -> list[str]:
    """The changed JavaScript/TypeScript/Go source files, whose behaviour is not compared (yet): not the
    deleted ones, not tests (a `*_test.go` or `test/…` is no code whose behaviour changed)."""
    return sorted(
        {
            f.path
            for f in diff.files
            if f.status != "deleted" and f.path.endswith(OTHER_SOURCES) and not is_test_path(f.path)
        }
    )
