"""load_backends(): the portable (dynamic-backend) llama.cpp build needs its backends loaded by prereview."""

from __future__ import annotations

import pytest


def test_the_installed_build_has_a_backend() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install prereview[llama]")
    from bot.models.llama_cpp import load_backends

    # an ordinary build registers its CPU backend statically; a GGML_BACKEND_DL build gets them loaded
    # from llama_cpp/lib here. Either way the model can be created only with at least one.
    assert load_backends() >= 1
