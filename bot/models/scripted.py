"""A deterministic model that ships in the package: tests and demos select it by config, nothing is patched.

A script is JSON: {"replies": [STEP, ...], "default": STEP}. Each request takes the first unused step
whose optional "match" regex occurs in the last user message, else "default". A STEP is one of
  {"text": "...", "finish_reason": "stop"}    reply with this text
  {"findings": [...]}                          reply with {"findings": [...]} as JSON
  {"raise": "message"}                          fail like a broken backend
`score` (token probabilities) reads "scores": [{"match": regex, "logprobs": {"yes": -0.1, "no": -2.3}}, ...]:
the first entry whose regex occurs in the last user message (entries are reused); none matches, or no
"scores" key: None, as from a backend without token probabilities.
Inside text or findings, "{first_added}" and "{first_added_line}" become the first added line of the
prompt's diff (its code and its number), so one script fits any change.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from .base import Completion, Message, ModelError, Scores

_ADDED = re.compile(r"^\s*(\d+) \+ (.*)$", re.M)

DEFAULT_SCRIPT: dict[str, Any] = {
    "replies": [],
    "default": {
        "findings": [
            {
                "quote": "{first_added}",
                "line": "{first_added_line}",
                "message": "Scripted finding on the first added line (scripted test model).",
                "category": "bug",
                "severity": "medium",
                "cwe": "",
            }
        ]
    },
}


class ScriptedModel:
    def __init__(
        self, script: dict[str, Any] | None = None, name: str = "scripted", n_ctx: int = 8192
    ) -> None:
        self.name = name
        self.n_ctx = n_ctx
        self._script = script if script is not None else DEFAULT_SCRIPT
        self._used: set[int] = set()
        self.requests: list[list[Message]] = []  # what `complete` was asked
        self.scored: list[list[Message]] = []  # what `score` was asked

    @classmethod
    def from_file(cls, path: str | None) -> ScriptedModel:
        if not path:
            return cls()
        p = Path(path)
        try:
            return cls(json.loads(p.read_text(encoding="utf-8")), name=f"scripted:{p.name}")
        except (OSError, json.JSONDecodeError) as exc:
            raise ModelError(f"cannot read the model script {p} ({exc}); fix model.script") from exc

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)

    def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None = None,
        max_tokens: int,
        temperature: float = 0.0,
    ) -> Completion:
        t0 = time.monotonic()
        self.requests.append(messages)
        prompt = messages[-1].content if messages else ""
        step = self._pick(prompt)
        if "raise" in step:
            raise ModelError(str(step["raise"]))
        text = step["text"] if "text" in step else json.dumps({"findings": step.get("findings", [])})
        m = _ADDED.search(prompt)
        if m:
            code = json.dumps(m.group(2).strip())[1:-1]
            text = text.replace('"{first_added_line}"', m.group(1)).replace("{first_added}", code)
        else:
            text = json.dumps({"findings": []}) if "{first_added}" in text else text
        return Completion(
            text=text,
            finish_reason=step.get("finish_reason", "stop"),
            prompt_tokens=sum(self.count_tokens(x.content) for x in messages),
            completion_tokens=self.count_tokens(text),
            seconds=time.monotonic() - t0,
        )

    def score(self, messages: list[Message], words: list[str]) -> Scores | None:
        self.scored.append(messages)
        prompt = messages[-1].content if messages else ""
        for entry in self._script.get("scores", []):
            if re.search(entry.get("match", ""), prompt):
                got = entry.get("logprobs", {})
                return Scores({w: float(got.get(w, -30.0)) for w in words}, self.count_tokens(prompt), 0.0)
        return None

    def _pick(self, prompt: str) -> dict[str, Any]:
        for i, step in enumerate(self._script.get("replies", [])):
            if i in self._used:
                continue
            if "match" in step and not re.search(step["match"], prompt):
                continue
            self._used.add(i)
            return step
        return dict(self._script.get("default", {"findings": []}))


def from_config(cfg: Any, progress: Any = None) -> ScriptedModel:
    return ScriptedModel.from_file(cfg.script)
