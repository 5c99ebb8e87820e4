"""Renderers: a Review as JSON, SARIF, reviewdog rdjson, markdown (PR comment) or terminal text."""

from __future__ import annotations

import importlib

from ..config import ReviewConfig
from ..types import Review

_RENDERERS = {
    "text": "bot.render.text:render_text",
    "markdown": "bot.render.markdown:render_markdown",
    "json": "bot.render.json_out:render_json",
    "rdjson": "bot.render.rdjson:render_rdjson",
    "sarif": "bot.render.sarif:render_sarif",
}
FORMATS = tuple(_RENDERERS)


def render(review: Review, fmt: str, cfg: ReviewConfig | None = None) -> str:
    """`cfg`: the review options a format honours (markdown: `max_comments_per_file`, as a PR would)."""
    if fmt not in _RENDERERS:
        raise ValueError(f"unknown format {fmt}; use one of {', '.join(FORMATS)}")
    module, _, attr = _RENDERERS[fmt].partition(":")
    fn = getattr(importlib.import_module(module), attr)
    if fmt == "markdown" and cfg is not None:
        return fn(review, max_per_file=cfg.max_comments_per_file)  # type: ignore[no-any-return]
    return fn(review)  # type: ignore[no-any-return]
