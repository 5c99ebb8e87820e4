"""The prereview image (Dockerfile), emulated without a container engine: its build stage's own step
(scripts/ci/install.sh into /opt/prereview, extras github,gitlab) run into a directory, and its baked model
cache (/opt/prereview-cache, the default model; a sparse file with the verified stamp: the rehearsals use
the scripted model, so the GGUF's bytes are never read). What a job in the image sees is an `Image`: that
venv's bin first on PATH, and the image's ENV (PREREVIEW_CACHE_DIR).

Built once per test session (pytest's `prereview_image` fixture in tests/conftest.py): a few minutes of
pip installs, from pip's cache after the first time. The llama-cpp-python wheel is the one pip built on
this machine (nothing is compiled); semgrep is linked when one is installed beside this interpreter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bot.models import catalog
from tests.ci.runner import CLEAN_PATH, Image, base_python

IMAGE = "ghcr.io/owner/prereview:v0.1.0"  # the template's and the Gitea example's default


def seed_model(cache_dir: Path, name: str, scratch: Path) -> None:
    """`name` as `bot.cli.ci_model` leaves it in a cache dir: the GGUF (sparse here) and its stamp."""
    entry = catalog.CATALOG[name]
    models = cache_dir / "models"
    models.mkdir(parents=True, exist_ok=True)
    gguf = models / entry.filename
    real = catalog.cache_dir() / "models" / entry.filename
    if real.is_file() and real.stat().st_size == entry.size:
        os.symlink(real, gguf)
    else:
        with gguf.open("wb") as fh:
            fh.truncate(entry.size)
    gguf.with_suffix(".verified").write_text(entry.sha256)


def build(root: Path, source: Path, wheel: Path, env: dict[str, str]) -> Image:
    """Install prereview from `source` as the Dockerfile's build stage does; bake the default model."""
    venv, cache, wheels = root / "opt" / "prereview", root / "opt" / "prereview-cache", root / "wheels"
    wheels.mkdir(parents=True)
    shutil.copy(wheel, wheels / wheel.name)
    python = base_python()
    run_env = {
        "HOME": str(root / "home"),
        "PATH": f"{python.parent}:{CLEAN_PATH}",
        "LANG": "C.UTF-8",
        "PREREVIEW_VENV": str(venv),
        "PREREVIEW_SPEC": str(source),
        "PREREVIEW_EXTRAS": "github,gitlab",
        "PREREVIEW_PYTHON": str(python),
        "PREREVIEW_WHEELHOUSE": str(wheels),
        **env,
    }
    proc = subprocess.run(
        ["bash", str(source / "scripts" / "ci" / "install.sh")], env=run_env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        pytest.fail(f"the emulated image's install failed:\n{proc.stdout}\n{proc.stderr}")
    seed_model(cache, catalog.DEFAULT_MODEL, root)
    return Image(path=[str(venv / "bin"), str(python.parent)], env={"PREREVIEW_CACHE_DIR": str(cache)})
