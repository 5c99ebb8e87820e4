"""The oracles of the rules that judge a test's call made again with an argument varied (the tracer's
variants, prereview_variants.py): wrapped in a forwarding proxy, with a line break at its end, at an edge
of its type. Their rows, with severity and origin, are in rules.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .callables import Changed
from .compare import OUTER, Difference, clearest

_WRAPPED_WHY = (
    "Before this change it also took an object that forwards attribute access to the test's argument "
    "(as file, stream and lazy-object wrappers do); now it fails on one. An `isinstance` check of an ABC "
    "or a Protocol, or a special method looked up on the type, does not see through such wrappers; "
    "`hasattr` does."
)
_BREAK_WHY = (
    "Before this change it rejected the test's value with a line break at its end; now it lets it "
    "through, so a CR/LF can reach a header, a log line or a protocol field (CRLF injection). In a "
    "regex, `$` also matches before a final newline: anchor with `\\Z` (or use `fullmatch`)."
)


def wrapped_fails(c: Changed, diffs: Sequence[Difference]) -> list[Difference]:
    """Only head failing where base returned counts (a wrapper prints differently)."""
    return clearest([d for d in diffs if d.head_failed])


def lets_break_through(c: Changed, diffs: Sequence[Difference]) -> list[Difference]:
    """Base rejected the value with a line break, head accepts it and passes it on: a check's answer
    (None, True) or a result that still holds the break (head stripping it now is not letting it
    through)."""

    def one(d: Difference) -> bool:
        if d.base.get("kind") != "raise" or d.head.get("kind") != "return":
            return False
        got = str(d.head.get("repr"))
        return got in ("None", "True") or "\\n" in got

    return clearest([d for d in diffs if one(d)])


def _raises(source: str, error: str) -> int:
    """How many `raise` statements of `error` (by its last name) a callable's source holds."""
    name = error.rsplit(".", 1)[-1]
    return len(re.findall(rf"\braise\s+(?:[\w.]+\.)?{re.escape(name)}\b", source)) if name else 0


def _said_in(source: str, r: dict[str, Any]) -> bool:
    """The exception's message is written in the source (its first words, a literal the code raises)."""
    words = str(r.get("message") or "").strip()[:24]
    return len(words) >= 8 and words in source


def _deliberate(c: Changed, r: dict[str, Any], side: str) -> bool:
    """`side`'s own code raises this error where the other side's does not: a check the change added
    (side "head") or removed (side "base")."""
    mine, other = (c.head_source, c.base_source) if side == "head" else (c.base_source, c.head_source)
    error = str(r.get("type") or "")
    return _raises(mine, error) > _raises(other, error) or (_said_in(mine, r) and not _said_in(other, r))


def edge_failure(c: Changed, diffs: Sequence[Difference]) -> list[Difference]:
    """Head raises or crashes on an edge input where base returned, unless head's own code now raises
    that error on purpose (a check the change added: input validation is not a regression)."""

    def one(d: Difference) -> bool:
        return d.head_failed and not (d.head.get("kind") == "raise" and _deliberate(c, d.head, "head"))

    return clearest([d for d in diffs if one(d)])


def lost_check(c: Changed, diffs: Sequence[Difference]) -> list[Difference]:
    """Base rejected an input with an error its own code raises, and the change removed that `raise`:
    head now returns a result for it (the tests' own calls, or the same calls at an edge)."""

    def one(d: Difference) -> bool:
        if d.base.get("kind") != "raise" or d.head.get("kind") != "return":
            return False
        return _deliberate(c, d.base, "base")

    return clearest([d for d in diffs if one(d)])


def _told(r: dict[str, Any], kind: str) -> tuple[Any, ...]:
    """An outcome, with what the variant changed in the input taken out: letter case for "case", line
    breaks for "line break" (in a repr they are the escapes `\\n`, `\\r`), nothing for an edge."""
    text = str((r.get("full") or r.get("repr")) if r.get("kind") == "return" else r.get("message") or "")
    if kind == "case":
        text = text.casefold()
    elif kind == "line break":
        text = re.sub(r"(\\r)?\\n", "", text)
    return (r.get("kind"), r.get("type"), text)


def lost_invariance(c: Changed, diffs: Sequence[Difference]) -> list[Difference]:
    """A test's outer call made again varied (prereview_outer.py): at base it gave the same result as
    the call the test made (up to what the variant changed: `parse("x as y")` is `parse("x AS y")` in
    lower case), at head it does not, while the call the test made gives one result at both sides. The
    change made the result depend on an aspect of the input it ignored before."""

    def one(d: Difference) -> bool:
        kind = d.variant.split(" ", 1)[1].rsplit(" ", 1)[0] if d.variant.startswith(OUTER) else ""
        was, now = d.base.get("unvaried"), d.head.get("unvaried")
        if not kind or not isinstance(was, dict) or not isinstance(now, dict):
            return False
        if _told(was, "") != _told(now, ""):
            return False
        return _told(d.base, kind) == _told(was, kind) and _told(d.head, kind) != _told(now, kind)

    return clearest([d for d in diffs if one(d)])
