"""Small pieces of the notes' wording shared across stages."""

from __future__ import annotations

from collections.abc import Sequence


def first_few(items: Sequence[str], n: int = 3) -> str:
    """`a, b, c and 4 more`: the first `n` of `items`, joined, and how many were left out."""
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")
