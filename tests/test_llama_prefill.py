"""The llama.cpp backend's prompt prefill goes to llama.cpp in short slices, so Ctrl-C stops it promptly
(Python handles a signal only between C calls). A stand-in for the Llama object records the calls."""

from __future__ import annotations

from typing import Any

import pytest


class _Ctx:
    def kv_cache_seq_rm(self, seq: int, start: int, end: int) -> bool:
        return True


class _Llm:
    """What _prefill uses of llama_cpp.Llama: cached input ids, n_tokens, the KV trim, reset, eval."""

    def __init__(self, interrupt_after: int | None = None) -> None:
        self._input_ids: list[int] = []
        self.n_tokens = 0
        self._ctx = _Ctx()
        self.calls: list[list[int]] = []
        self.interrupt_after = interrupt_after

    def reset(self) -> None:
        self._input_ids, self.n_tokens = [], 0

    def eval(self, tokens: list[int]) -> None:
        if self.interrupt_after is not None and len(self.calls) == self.interrupt_after:
            raise KeyboardInterrupt  # what Python raises once the C call returns after a Ctrl-C
        self.calls.append(list(tokens))
        self._input_ids = self._input_ids[: self.n_tokens] + list(tokens)
        self.n_tokens += len(tokens)


def _model(llm: _Llm) -> Any:
    pytest.importorskip("numpy", reason="the llama backend needs numpy: pip install -e '.[model]'")
    from bot.models.llama_cpp import LlamaCppModel

    model = LlamaCppModel.__new__(LlamaCppModel)  # no GGUF: only _prefill runs
    model._llm = llm
    return model


def test_a_long_prompt_is_evaluated_in_short_slices_in_order() -> None:
    from bot.models.llama_cpp import PREFILL_SLICE

    llm = _Llm()
    prompt = list(range(1, 1601))
    assert _model(llm)._prefill(prompt) == 1600
    assert [t for call in llm.calls for t in call] == prompt
    assert max(len(c) for c in llm.calls) <= PREFILL_SLICE <= 128


def test_the_shared_prefix_is_reused_and_only_the_rest_is_sliced() -> None:
    from bot.models.llama_cpp import PREFILL_SLICE

    llm = _Llm()
    model = _model(llm)
    model._prefill(list(range(1, 301)))
    llm.calls.clear()
    assert model._prefill(list(range(1, 301)) + list(range(900, 1100))) == 200
    assert [t for call in llm.calls for t in call] == list(range(900, 1100))
    assert max(len(c) for c in llm.calls) <= PREFILL_SLICE


def test_an_interrupt_between_slices_stops_the_prefill_and_keeps_what_was_evaluated() -> None:
    llm = _Llm(interrupt_after=2)
    model = _model(llm)
    with pytest.raises(KeyboardInterrupt):
        model._prefill(list(range(1, 1601)))
    assert len(llm.calls) == 2 and llm.n_tokens == sum(len(c) for c in llm.calls) < 1600
