"""Review notes in words for a pull request's readers.

Stages write notes for operators ("behaviour not compared for f (no inputs: parameter types with no
literal values, no doctest)"). The PR comment says what was not checked, plainly; the note as written
stays in the collapsed run details.
"""

from __future__ import annotations

import re

_NO_INPUTS = re.compile(r"^no inputs\b.*|^no example inputs\b.*")
_BEHAVIOUR_FOR = re.compile(r"^behaviour not compared for (.+)$", re.S)
_BEHAVIOUR = re.compile(r"^behaviour not compared: (.+)$", re.S)
_ITEM = re.compile(r"([^,(]+?)\s*\(((?:[^()]|\([^()]*\))*)\)\s*(?:,\s*|$)")


def _why(reason: str) -> str:
    if _NO_INPUTS.match(reason):
        return "no example inputs could be made"
    if reason == "no sandbox":
        return "no sandbox to run it in"
    return reason


def _items(text: str) -> list[tuple[str, str]]:
    """`f (why), g (why)` -> [(f, why), (g, why)]; [] when it does not read that way."""
    found = _ITEM.findall(text)
    return [(name.strip(), why.strip()) for name, why in found] if found else []


def for_readers(note: str) -> str:
    """The note as a PR reader should read it (unchanged when it already reads plainly)."""
    m = _BEHAVIOUR_FOR.match(note)
    if m:
        items = _items(m.group(1))
        if items:
            by_why: dict[str, list[str]] = {}
            for name, why in items:
                by_why.setdefault(_why(why), []).append(f"`{name}`" if " " not in name else name)
            parts = [f"{', '.join(names)} ({why})" for why, names in by_why.items()]
            return "Behaviour before and after the change was not compared for " + "; ".join(parts) + "."
    m = _BEHAVIOUR.match(note)
    if m:
        why = m.group(1)
        if "runs only in a sandbox" in why:
            return "Behaviour before and after the change was not compared: no sandbox is set up to run it."
        return f"Behaviour before and after the change was not compared: {why}"
    if note.startswith("behaviour: budget_seconds spent"):
        return "The behaviour comparison ran out of its time budget; some calls were not made."
    return note
