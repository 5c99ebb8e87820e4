"""Terminal progress with rich (on stderr, so stdout stays machine-readable)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from ..progress import Quiet


class _RichProgress:
    def __init__(self, progress: Progress, console: Console) -> None:
        self._p, self._console = progress, console
        self._task = progress.add_task("starting", total=None)

    def message(self, text: str) -> None:
        self._console.print(f"[dim]{text}[/dim]", highlight=False)

    def step(self, done: int, total: int, label: str) -> None:
        self._p.update(self._task, completed=done, total=total, description=label)


@contextmanager
def console_progress(enabled: bool = True) -> Iterator[_RichProgress | Quiet]:
    if not enabled:
        yield Quiet()
        return
    console = Console(stderr=True)
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as p:
        yield _RichProgress(p, console)
