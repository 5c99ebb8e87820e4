"""Count what a stage's model requests cost (tokens, seconds), whichever code path makes them.

A stage wraps its model factory in a `Meter`, hands the meter on as the factory, and adds the totals to
the review's usage afterwards: requests made deep inside (a patch proposal, an agent step, a self-check)
are counted without each caller keeping its own tally.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .base import Completion, Message, Model, Scores


class Meter:
    """A model factory whose models count every `complete` and `score` into this meter."""

    def __init__(self, factory: Callable[[], Model]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self.requests = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.seconds = 0.0

    def __call__(self) -> Model:
        return _Metered(self._factory(), self)  # type: ignore[return-value]

    def preload(self) -> None:
        preload = getattr(self._factory, "preload", None)
        if preload is not None:
            preload()

    def record(self, prompt_tokens: int, completion_tokens: int, seconds: float) -> None:
        with self._lock:
            self.requests += 1
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.seconds += seconds

    def add_to(self, usage: Any, *, seconds: bool = True) -> None:
        """Add the totals to a pipeline `Usage` (`seconds=False` where the stage counts its own time)."""
        usage.prompt_tokens += self.prompt_tokens
        usage.completion_tokens += self.completion_tokens
        if seconds:
            usage.seconds_model += self.seconds


class _Metered:
    def __init__(self, inner: Model, meter: Meter) -> None:
        self._inner, self._meter = inner, meter

    def complete(self, messages: list[Message], **kw: Any) -> Completion:
        out = self._inner.complete(messages, **kw)
        self._meter.record(out.prompt_tokens, out.completion_tokens, out.seconds)
        return out

    def score(self, messages: list[Message], words: list[str]) -> Scores | None:
        out = self._inner.score(messages, words)
        if out is not None:
            self._meter.record(out.prompt_tokens, 0, out.seconds)
        return out

    def __getattr__(self, name: str) -> Any:  # name, n_ctx, count_tokens and anything else
        if name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)
