"""load_backends(): the portable (dynamic-backend) llama.cpp build needs its backends loaded by prereview."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_the_installed_build_has_a_backend() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install -e '.[llama]'")
    from bot.models.llama_cpp import load_backends

    # an ordinary build registers its CPU backend statically; a GGML_BACKEND_DL build gets them loaded
    # from llama_cpp/lib here. Either way the model can be created only with at least one.
    assert load_backends() >= 1


def test_amx_is_read_from_the_cpu_flags(tmp_path: Path) -> None:
    from bot.models.hardware import cpu_has_amx

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f amx_bf16 amx_tile amx_int8\n")
    assert cpu_has_amx(info)
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f\n")
    assert not cpu_has_amx(info)
    assert not cpu_has_amx(tmp_path / "missing")
