"""The llama.cpp backends of the installed llama-cpp-python: registered statically by an ordinary build,
loaded from the package's own folders by prereview for a portable (dynamic-backend) one."""

from __future__ import annotations

import ctypes
from pathlib import Path


def load_backends() -> int:
    """How many llama.cpp backends are registered, loading them first for a dynamic-backend build.

    A portable build (GGML_BACKEND_DL=ON, GGML_CPU_ALL_VARIANTS=ON: one CPU backend per x86 level, the
    best one picked at load time) registers nothing by itself, and llama.cpp looks for the backend
    libraries only beside the executable (python) and in the working directory, so llama-cpp-python
    never finds them (abetlen/llama-cpp-python#2069). Load them from the package's own directories.
    An ordinary build registers its backends statically: nothing to do."""
    import llama_cpp

    package = Path(llama_cpp.__file__).parent
    libs = [
        package / "lib",
        package.parent / "bin",
    ]  # variants land in bin/ unless CMAKE_INSTALL_BINDIR moves them
    ggml = ggml_library(libs, _mapped())
    if ggml is None:
        return 1  # statically linked: the backends are part of libllama
    lib = ctypes.CDLL(str(ggml))
    lib.ggml_backend_reg_count.restype = ctypes.c_size_t
    count = int(lib.ggml_backend_reg_count())
    if count == 0 and hasattr(lib, "ggml_backend_load_all_from_path"):
        lib.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
        for d in libs:
            if d.is_dir() and count == 0:
                lib.ggml_backend_load_all_from_path(str(d).encode())
                count = int(lib.ggml_backend_reg_count())
    return count


GGML_NAMES = ("libggml.so.0", "libggml.so", "libggml.dylib", "ggml.dll")


def ggml_library(libs: list[Path], mapped: list[str]) -> Path | None:
    """The ggml library libllama itself loaded, whose backend registry llama.cpp reads: the file already
    mapped into this process (`mapped`: /proc/self/maps), else the first of GGML_NAMES in `libs`, the
    soname's file first. A wheel cannot hold links, so pip installs `libggml.so`, `libggml.so.0` and
    `libggml.so.0.25.3` as three copies: opening another copy than libllama's (`libggml.so`, needed
    `libggml.so.0`) makes a second ggml whose registry gets the backends and llama.cpp then finds none
    ("no backends are loaded": every model load fails)."""
    dirs = {d.resolve() for d in libs if d.is_dir()}
    for path in mapped:
        p = Path(path)
        if p.name.startswith("libggml.") and p.parent.resolve() in dirs:
            return p
    return next((d / n for d in libs for n in GGML_NAMES if (d / n).exists()), None)


def _mapped() -> list[str]:
    """The files mapped into this process (Linux; [] elsewhere)."""
    try:
        text = Path("/proc/self/maps").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [fields[5] for line in text.splitlines() if len(fields := line.split(None, 5)) == 6]
