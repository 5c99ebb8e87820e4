"""The model's system prompts, as text files loaded by name (package data: the wheel carries them)."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def load(name: str) -> str:
    """The prompt `bot/prompts/<name>.txt`, without the file's final newline (read once, on first use)."""
    text = resources.files(__name__).joinpath(f"{name}.txt").read_text(encoding="utf-8")
    return text.removesuffix("\n")
