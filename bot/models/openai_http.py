"""OpenAI-compatible chat completions over HTTP (llama-server, llama_cpp.server, vLLM, Ollama)."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from typing import Any

import httpx

from ..config import ModelConfig
from .base import Completion, Message, ModelError, Scores


class OpenAIHTTPModel:
    def __init__(
        self,
        api_base: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 300.0,
        retries: int = 2,
        n_ctx: int = 8192,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.name = model
        self.n_ctx = n_ctx
        self._base = api_base.rstrip("/")
        self._retries = retries
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=self._base,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=10.0),
            transport=transport,
        )
        self._schema_style: str | None = None  # "json_schema" (OpenAI, vLLM, llama-server) or "json_object"

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 3)  # conservative: servers tokenize, we only budget

    def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None = None,
        max_tokens: int,
        temperature: float = 0.0,
    ) -> Completion:
        body: dict[str, Any] = {
            "model": self.name,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
            "cache_prompt": True,  # llama-server: reuse the KV cache for the shared prompt prefix
        }
        t0 = time.monotonic()
        if schema is not None:
            styles = [self._schema_style] if self._schema_style else ["json_schema", "json_object"]
            last: httpx.Response | None = None
            for style in styles:
                body["response_format"] = _response_format(style, schema)
                last = self._post(body)
                if not _rejects_format(last):
                    self._schema_style = style
                    break
            assert last is not None
            resp = last
        else:
            resp = self._post(body)
        if resp.status_code >= 400:
            detail = " ".join(resp.text[:300].split())  # one line, whatever the server sent
            hint = {
                401: "; set the API key variable (model.api_key_env)",
                403: "; check the API key",
                404: "; check --api-base (it usually ends with /v1) and the model name",
            }
            raise ModelError(
                f"model server {self._base} answered HTTP {resp.status_code}: {detail[:200]}"
                + hint.get(resp.status_code, "")
            )
        return _parse(resp, time.monotonic() - t0, self._base)

    def score(self, messages: list[Message], words: list[str]) -> Scores | None:
        """From the server's `top_logprobs` for one generated token; None when it sends none (not every
        OpenAI-compatible server does) or cannot be reached: the caller asks instead."""
        body: dict[str, Any] = {
            "model": self.name,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": True,
            "top_logprobs": 20,
            "cache_prompt": True,
        }
        t0 = time.monotonic()
        try:
            resp = self._post(body)
            data = resp.json() if resp.status_code < 400 else {}
            top = data["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
            usage = data.get("usage") or {}
        except (ModelError, ValueError, KeyError, IndexError, TypeError):
            return None
        out: dict[str, float] = {}
        for w in words:
            hits = [
                float(t["logprob"])
                for t in top
                if isinstance(t, dict) and str(t.get("token", "")).strip().lower() == w.lower()
            ]
            out[w] = _logsumexp(hits) if hits else -30.0  # not among the top 20: very unlikely
        return Scores(out, int(usage.get("prompt_tokens") or 0), time.monotonic() - t0)

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        delay = 1.0
        for attempt in range(self._retries + 1):
            try:
                resp = self._client.post("/chat/completions", json=body)
            except httpx.TimeoutException:
                if attempt == self._retries:
                    raise ModelError(
                        f"model server {self._base} timed out; raise model.timeout or check the server"
                    ) from None
            except httpx.TransportError as exc:
                if attempt == self._retries:
                    raise ModelError(
                        f"cannot reach the model server at {self._base} ({exc.__class__.__name__}); "
                        "start it or fix --api-base"
                    ) from None
            else:
                if (resp.status_code < 500 and resp.status_code != 429) or _rejects_format(resp):
                    return resp
                if attempt == self._retries:
                    return resp
            time.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable")


def _logsumexp(values: list[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def _rejects_format(resp: httpx.Response) -> bool:
    """The server does not know this response_format style (so try the other one, don't retry).

    OpenAI, vLLM and llama-server answer 400/422; llama_cpp.server (0.3.x) answers 500 with the
    pydantic error naming `response_format` (its request model only allows "text" and "json_object").
    """
    return resp.status_code in (400, 422) or (resp.status_code == 500 and "response_format" in resp.text)


def _response_format(style: str, schema: dict[str, Any]) -> dict[str, Any]:
    if style == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "findings", "schema": schema, "strict": True}}
    return {"type": "json_object", "schema": schema}  # llama_cpp.server's form


def _parse(resp: httpx.Response, seconds: float, base: str) -> Completion:
    try:
        data = resp.json()
        choice = data["choices"][0]
        text = choice["message"]["content"] or ""
        usage = data.get("usage") or {}
    except (ValueError, KeyError, IndexError, TypeError):
        raise ModelError(f"model server {base} returned something that is not a chat completion") from None
    timings = data.get("timings") or {}
    return Completion(
        text=text,
        finish_reason=choice.get("finish_reason") or "stop",
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        seconds=seconds,
        prompt_tokens_evaluated=timings.get("prompt_n"),
    )


def from_config(cfg: ModelConfig, progress: Callable[[str], None] | None = None) -> OpenAIHTTPModel:
    assert cfg.api_base
    return OpenAIHTTPModel(
        cfg.api_base,
        cfg.name,
        api_key=os.environ.get(cfg.api_key_env),
        timeout=cfg.timeout,
        retries=cfg.retries,
        n_ctx=cfg.n_ctx or 8192,
    )
