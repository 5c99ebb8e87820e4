"""A LazyModel that hands out one scripted model (the security tests' reviews)."""

from __future__ import annotations

from bot.models.scripted import ScriptedModel
from bot.pipeline.run import LazyModel


class Fixed(LazyModel):
    def __init__(self, model: ScriptedModel) -> None:
        self._model = model

    def __call__(self) -> ScriptedModel:
        return self._model
