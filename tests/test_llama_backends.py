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


def test_the_ggml_copy_libllama_loaded_is_the_one_given_the_backends(tmp_path: Path) -> None:
    """A portable wheel installs `libggml.so` and `libggml.so.0` as two copies (a wheel holds no links);
    libllama needs `libggml.so.0`. Loading the backends into the other copy left llama.cpp with none:
    every model load failed ("no backends are loaded"), measured here with the wheel
    scripts/ci/llama-wheel.sh builds. The mapped copy is the one, else the soname's file."""
    from bot.models.backends import ggml_library

    lib = tmp_path / "llama_cpp" / "lib"
    lib.mkdir(parents=True)
    for name in ("libggml.so", "libggml.so.0", "libggml.so.0.25.3", "libggml-base.so.0", "libllama.so.0"):
        (lib / name).write_bytes(b"\x7fELF")
    maps = [str(lib / "libllama.so.0"), str(lib / "libggml-base.so.0"), str(lib / "libggml.so.0")]
    assert ggml_library([lib, tmp_path / "bin"], maps) == lib / "libggml.so.0"
    assert ggml_library([lib], []) == lib / "libggml.so.0"  # nothing mapped: the soname's file first
    (lib / "libggml.so.0").unlink()
    assert ggml_library([lib], []) == lib / "libggml.so"  # a build that installs only the plain name
    assert ggml_library([tmp_path / "none"], []) is None  # statically linked


def test_the_process_maps_are_read_as_paths() -> None:
    from bot.models.backends import _mapped

    paths = _mapped()
    assert paths and all(p.startswith(("/", "[")) or p == "" for p in paths)
