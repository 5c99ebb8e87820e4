"""`ask_json`: one grammar-constrained question, its answer parsed and checked against the schema; a cut
answer and an invalid one are told apart (callers decide what each means)."""

from __future__ import annotations

import pytest

from bot.models import Message, ModelError
from bot.models.answer import ask_json
from bot.models.scripted import ScriptedModel

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"enum": ["yes", "no"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}
ASK = [Message("system", "Answer JSON."), Message("user", "Is it?")]


def _ask(step: dict):  # type: ignore[no-untyped-def]
    return ask_json(ScriptedModel({"replies": [step]}), ASK, SCHEMA, max_tokens=16)


def test_a_valid_answer_is_its_object() -> None:
    answer = _ask({"text": '{"verdict": "yes"}'})
    assert answer.data == {"verdict": "yes"} and not answer.cut and answer.error == ""


def test_a_cut_answer_is_unusable_even_when_it_parses() -> None:
    answer = _ask({"text": '{"verdict": "no"}', "finish_reason": "length"})
    assert answer.data is None and answer.cut and "token limit" in answer.error


@pytest.mark.parametrize("text", ['{"verdict": "maybe"}', '{"verdict": "yes"', "[1, 2]", '"yes"', ""])
def test_an_answer_that_is_not_a_valid_object_is_unusable(text: str) -> None:
    answer = _ask({"text": text})
    assert answer.data is None and not answer.cut and answer.error


def test_a_failing_backend_is_raised_as_it_is() -> None:
    with pytest.raises(ModelError):
        _ask({"raise": "backend down"})
