"""How stages report progress; the CLI renders it with rich, tests and servers may ignore it."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def message(self, text: str) -> None: ...

    def step(self, done: int, total: int, label: str) -> None: ...


class Quiet:
    def message(self, text: str) -> None:
        pass

    def step(self, done: int, total: int, label: str) -> None:
        pass


class Collect:
    """Keeps every message (tests, webhook job logs)."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def message(self, text: str) -> None:
        self.messages.append(text)

    def step(self, done: int, total: int, label: str) -> None:
        self.messages.append(f"[{done}/{total}] {label}")
