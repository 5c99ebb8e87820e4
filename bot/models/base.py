"""The Model protocol and the records it exchanges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..types import PrereviewError


class ModelError(PrereviewError):
    """The model backend cannot serve a request (down, corrupt file, garbage)."""


@dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str  # "stop" | "length"
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    prompt_tokens_evaluated: int | None = None  # after KV prefix-cache reuse, where known


@dataclass(frozen=True)
class Scores:
    """How likely each word is as the start of the reply: natural-log probabilities, case and a leading
    space folded together (`yes`, `Yes`, ` yes`)."""

    logprobs: dict[str, float]
    prompt_tokens: int
    seconds: float


class Model(Protocol):
    name: str
    n_ctx: int

    def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None = None,
        max_tokens: int,
        temperature: float = 0.0,
    ) -> Completion: ...

    def count_tokens(self, text: str) -> int: ...

    def score(self, messages: list[Message], words: list[str]) -> Scores | None:
        """The reply's first-token probabilities for `words` (one token each, as in `yes`/`no`), without
        sampling; None where the backend cannot tell (a server that returns no logprobs)."""
        ...
