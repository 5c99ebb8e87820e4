"""Reading Python-like text by its brackets: a call's closing parenthesis in a docstring's example
(generate.py), an object's fields at the top level of the tracer's state (seeded.py)."""

from __future__ import annotations

from collections.abc import Iterator


def brackets(text: str, opening: str = "([{", closing: str = ")]}") -> Iterator[tuple[int, str, int]]:
    """Each character of `text` outside quoted strings (a backslash escapes the next character inside
    them) with the bracket depth after it: (index, character, depth)."""
    depth, quote, escaped = 0, "", False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "'\"":
            quote = ch
            continue
        if ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        yield i, ch, depth
