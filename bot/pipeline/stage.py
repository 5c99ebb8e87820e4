"""The stage protocol: one method over the review context and the findings so far.

A stage that can start work early (while earlier stages run) also has `prepare(ctx)`: the pipeline calls
every stage's `prepare` first, in order, then every stage's `run` in order.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..types import Finding
from .context import ReviewContext


class Stage(Protocol):
    name: str  # the key of its seconds in stats.stages

    def run(self, ctx: ReviewContext, findings: list[Finding]) -> list[Finding]: ...


@runtime_checkable
class Prepares(Protocol):
    """Optional: start background work (a model load, scanner subprocesses, test runs) before `run`."""

    def prepare(self, ctx: ReviewContext) -> None: ...
