"""Secret masking for everything a server job sends out, whatever the command.

A job's forge session and model are wrapped once (`ForgeRunner.run`): the change's secrets become known
when the session fetches it (diff, title and description: `redact.for_change`), and from then on every
model prompt and completion and every text posted (replies, reviews, suggestions, draft PRs) is masked.
Before the fetch, well-known token shapes are masked anyway, and the server's own secrets (`known`: its
forge tokens and webhook secrets, whatever their shape) always are. Handlers need not remember to redact.
"""

from __future__ import annotations

from typing import Any

from ..change import redact
from ..change.diff import parse
from ..models.base import Completion, Message, Model, Scores
from ..pipeline.run import LazyModel
from ..types import ChangeRequest, Finding, Review


class Masking:
    """The secrets of the current job's change, plus the server's own. One per worker process, reset for
    each job (the server's own stay)."""

    def __init__(self, known: frozenset[str] = frozenset()) -> None:
        self._known = known
        self.redactor = redact.Redactor(known)

    def reset(self) -> None:
        self.redactor = redact.Redactor(self._known)

    def learn(self, change: ChangeRequest) -> None:
        paths = [f.path for f in parse(change.diff_text).files]
        found = redact.for_change(change, lambda _: None, paths)
        self.redactor = redact.Redactor(self.redactor.values | found.values)

    def text(self, s: str) -> str:
        return self.redactor.mask(s)


class MaskedSession:
    """A ForgeSession whose fetch teaches `masking` the change's secrets and whose posts are masked."""

    def __init__(self, inner: Any, masking: Masking) -> None:
        self._inner, self._m = inner, masking

    def __getattr__(self, name: str) -> Any:  # react, clone, base_file, push, may_command, kind, …
        return getattr(self._inner, name)

    def fetch(self) -> ChangeRequest:
        change: ChangeRequest = self._inner.fetch()
        self._m.learn(change)
        return change

    def reply(self, text: str, comment_id: int | None) -> None:
        self._inner.reply(self._m.text(text), comment_id)

    def publish(self, change: ChangeRequest, review: Review, scope: Any = None, cfg: Any = None) -> None:
        self._inner.publish(change, self._m.redactor.review(review), scope, cfg)

    def suggest(self, change: ChangeRequest, findings: list[Finding], evidence: str) -> bool:
        masked = [self._m.redactor.finding(f) for f in findings]
        return bool(self._inner.suggest(change, masked, self._m.text(evidence)))

    def open_draft(self, branch: str, target: str, title: str, body: str) -> str:
        return str(self._inner.open_draft(branch, target, self._m.text(title), self._m.text(body)))

    def __repr__(self) -> str:
        return f"Masked({self._inner!r})"


class MaskedModel:
    """A Model whose prompts and completions pass through `masking`."""

    def __init__(self, inner: Model, masking: Masking) -> None:
        self._inner, self._m = inner, masking
        self.name, self.n_ctx = inner.name, inner.n_ctx

    def __getattr__(self, name: str) -> Any:  # anything else a backend offers
        return getattr(self._inner, name)

    def count_tokens(self, text: str) -> int:
        return self._inner.count_tokens(text)

    def score(self, messages: list[Message], words: list[str]) -> Scores | None:
        return self._inner.score([Message(m.role, self._m.text(m.content)) for m in messages], words)

    def complete(self, messages: list[Message], **kwargs: Any) -> Completion:
        safe = [Message(m.role, self._m.text(m.content)) for m in messages]
        out: Completion = self._inner.complete(safe, **kwargs)
        return Completion(
            self._m.text(out.text),
            out.finish_reason,
            out.prompt_tokens,
            out.completion_tokens,
            out.seconds,
            out.prompt_tokens_evaluated,
        )


class MaskedLazyModel(LazyModel):
    """A LazyModel (the model is still created on first use) that hands out MaskedModels."""

    def __init__(self, inner: LazyModel, masking: Masking) -> None:  # noqa: D107 (wraps, does not create)
        self._lazy, self._m = inner, masking

    def preload(self) -> None:
        self._lazy.preload()

    def __getattr__(self, name: str) -> Any:  # anything else LazyModel offers, from the wrapped one
        if name == "_lazy":
            raise AttributeError(name)
        return getattr(self._lazy, name)

    def __call__(self) -> Model:
        return MaskedModel(self._lazy(), self._m)
