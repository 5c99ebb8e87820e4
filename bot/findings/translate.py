"""`review.language`, made to hold: texts the model wrote in English anyway are translated in one more
request (bench/language.py measures the share of messages in the asked language before and after).

A small model told in the system prompt to write German still writes many findings in English (the
review prompt, the code and the schema are English). Each text that does not read as the asked language
(`language.written_in`) goes into a translation request of its own; a translation is kept only when it
reads as that language, so a failed or garbled one leaves the original text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .. import prompts
from ..models import Message, Model
from ..models.answer import ask_json
from .language import language_name, written_in

MAX_TEXTS = 8  # translation requests per review step (findings of one review, one walkthrough)
# One text per request, the answer's key named after the language: the bundled 0.5B translates that
# reliably, while a JSON list of several texts came back copied unchanged (bench/language.py).


def wanted(code: str) -> bool:
    """Whether `code` asks for a language other than English."""
    name = language_name(code) if code.strip() else None
    return name is not None and name != "English"


def needs(text: str, code: str) -> bool:
    """A text that reads as another language than the asked one (not one it cannot tell)."""
    return bool(text.strip()) and written_in(text, code) is False


def translate(model: Model, texts: Sequence[str], code: str) -> list[str]:
    """`texts` in language `code`: each one that is not yet goes through one model request (at most
    MAX_TEXTS); a text whose translation does not read as that language (or a failed request) stays."""
    out = list(texts)
    name = language_name(code)
    if name is None:
        return out
    key = re.sub(r"[^a-z]+", "_", name.lower()).strip("_") if name.isascii() else "translation"
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {key: {"type": "string"}},
        "required": [key],
        "additionalProperties": False,
    }
    system = Message("system", prompts.load("translate").format(name=name))
    for i in [i for i, t in enumerate(texts) if needs(t, code)][:MAX_TEXTS]:
        budget = min(768, 64 + 2 * len(texts[i]))
        data = ask_json(model, [system, Message("user", texts[i])], schema, max_tokens=budget).data
        if data is None:
            continue
        new = str(data[key]).strip()
        if new and written_in(new, code) is not False and len(new) <= 4 * len(texts[i]) + 40:
            out[i] = new
    return out
