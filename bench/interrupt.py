"""How fast Ctrl-C stops the in-process model, and what prefill slicing costs (prints figures; no asserts).

1. Prefill speed: the same prompt evaluated in one llama.cpp call per `n_batch` (as before) and in
   slices of `PREFILL_SLICE` tokens (bot/models/llama_cpp.py), tokens per second for each.
2. Stop latency: a SIGINT sent to the process mid-prefill of a long prompt; the seconds until
   KeyboardInterrupt reaches Python, with the slices (the backend now) and with one call (before).

usage: python bench/interrupt.py [--model qwen2.5-coder-0.5b] [--tokens 3000] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.config import ModelConfig  # noqa: E402
from bot.models import llama_cpp  # noqa: E402


def _prompt(model: llama_cpp.LlamaCppModel, n: int) -> list[int]:
    text = "\n".join(f"def f{i}(x):\n    return x * {i} + {i * 3}  # step {i}" for i in range(n // 8 + 50))
    return list(model._llm.tokenize(text.encode(), add_bos=False, special=False)[:n])


def _prefill(model: llama_cpp.LlamaCppModel, tokens: list[int], sliced: bool) -> float:
    model._llm.reset()
    t0 = time.monotonic()
    if sliced:
        model._prefill(tokens)
    else:
        model._llm.eval(tokens)  # the whole prompt in one call, n_batch tokens per decode
    return time.monotonic() - t0


def _stop_latency(model: llama_cpp.LlamaCppModel, tokens: list[int], sliced: bool, after: float) -> float:
    sent: list[float] = []

    def interrupt() -> None:
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(after, interrupt)
    timer.start()
    try:
        _prefill(model, tokens, sliced)
    except KeyboardInterrupt:
        return time.monotonic() - sent[0]
    finally:
        timer.cancel()
    return float("nan")  # finished before the signal: use more --tokens


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--tokens", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    model = llama_cpp.from_config(ModelConfig(name=args.model, n_ctx=max(4096, args.tokens + 64)))
    tokens = _prompt(model, args.tokens)
    print(f"model {model.name}, {model.threads} threads, prompt {len(tokens)} tokens")
    print(f"n_batch {model._llm.n_batch}, PREFILL_SLICE {llama_cpp.PREFILL_SLICE}")
    for sliced in (False, True):
        secs = [_prefill(model, tokens, sliced) for _ in range(args.runs)]
        label = "slices" if sliced else "one call"
        print(
            f"prefill, {label:8}: {len(tokens) / statistics.median(secs):7.1f} tokens/s",
            f"(median of {args.runs})",
        )
    for sliced in (False, True):
        lat = [_stop_latency(model, tokens, sliced, after=0.5) for _ in range(args.runs)]
        label = "slices" if sliced else "one call"
        print(
            f"Ctrl-C to KeyboardInterrupt, {label:8}:",
            f"median {statistics.median(lat):.2f}s, max {max(lat):.2f}s",
        )


if __name__ == "__main__":
    main()
