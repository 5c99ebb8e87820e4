"""One grammar-constrained question whose answer is a JSON object: ask, then parse and check it.

Every caller decides what an unusable answer means (a coverage entry, a note, nothing); this only says
which: cut at the token limit (`finish_reason == "length"`: the JSON is unfinished), or not a JSON object
valid for the schema. A backend failure (`ModelError`) is raised as it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import jsonschema

from .base import Completion, Message, Model, ModelError


@dataclass(frozen=True)
class Answer:
    completion: Completion
    data: dict[str, Any] | None  # the JSON object, valid for the schema; None when unusable
    error: str = ""  # why it is unusable (empty when `data` is set)

    @property
    def cut(self) -> bool:
        return self.completion.finish_reason == "length"


def ask_json(
    model: Model,
    messages: list[Message],
    schema: dict[str, Any],
    *,
    max_tokens: int,
    temperature: float = 0.0,
) -> Answer:
    completion = model.complete(messages, schema=schema, max_tokens=max_tokens, temperature=temperature)
    return parse(completion, schema)


def ask_object(
    model: Model, system: str, prompt: str, schema: dict[str, Any], *, max_tokens: int
) -> tuple[dict[str, Any], float]:
    """One system + user question's JSON object, valid for the schema, and the seconds it took; ({}, 0.0)
    when the backend failed or the answer was unusable (for callers to whom no answer means "nothing")."""
    messages = [Message("system", system), Message("user", prompt)]
    try:
        answer = ask_json(model, messages, schema, max_tokens=max_tokens)
    except ModelError:
        return {}, 0.0
    if answer.data is None:
        return {}, 0.0
    return answer.data, answer.completion.seconds


def parse(completion: Completion, schema: dict[str, Any]) -> Answer:
    """The completion's JSON object, checked against the schema it was asked under."""
    if completion.finish_reason == "length":
        return Answer(completion, None, "model output cut at the token limit")
    try:
        data = json.loads(completion.text)
        jsonschema.validate(data, schema)
    except (json.JSONDecodeError, jsonschema.ValidationError, RecursionError) as exc:
        return Answer(completion, None, f"not valid JSON for its schema ({str(exc)[:80]})")
    if not isinstance(data, dict):
        return Answer(completion, None, "not a JSON object")
    return Answer(completion, data)
