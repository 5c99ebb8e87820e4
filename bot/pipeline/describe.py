"""`/describe` without a review: the change masked exactly as a review masks it (`build_context`), then
one walkthrough request (findings/walkthrough.py)."""

from __future__ import annotations

from collections.abc import Callable

from ..config import Config
from ..findings.walkthrough import describe
from ..models import Model
from ..progress import Quiet
from ..types import ChangeRequest, Walkthrough
from .run import build_context


def describe_change(change: ChangeRequest, cfg: Config, model: Callable[[], Model]) -> Walkthrough:
    """The walkthrough of `change`; the model's answer is masked with the review's redactor."""
    ctx, redactor = build_context(change, cfg, progress=Quiet(), model=model)
    if not ctx.diff.files:
        return Walkthrough("", note="The change has no diff to describe.")
    return describe(ctx.change, ctx.diff, ctx.model(), language=cfg.review.language, mask=redactor.mask)
