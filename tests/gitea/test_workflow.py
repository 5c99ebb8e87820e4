"""The Gitea/Forgejo Actions example workflow: it parses, runs on pull requests, runs `prereview gitea` in
the release image, and (rehearsed) posts a review from its defaults against the emulated Gitea."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from bot.models import catalog
from bot.render.markdown import SUMMARY_MARKER
from tests.ci.image import IMAGE, seed_model
from tests.ci.runner import CacheStore, Image, workflow_job

from .conftest import BASE, HEAD, PR, SCRIPTED, rev

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "gitea" / ".gitea" / "workflows" / "prereview.yml"


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def test_the_example_workflow_runs_prereview_gitea_in_the_release_image() -> None:
    wf = _workflow()
    on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads a bare `on` as true
    assert set(on["pull_request"]["types"]) >= {"opened", "synchronize", "reopened"}
    [job] = wf["jobs"].values()
    assert job["timeout-minutes"] > 0
    steps = job["steps"]
    checkout = next(s for s in steps if str(s.get("uses", "")).startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    [review] = [s for s in steps if "prereview gitea" in str((s.get("with") or {}).get("args", ""))]
    assert review["uses"] == f"docker://{IMAGE}"  # this release's image: nothing installed by name
    assert review["env"]["PREREVIEW_GITEA_TOKEN"] == "${{ secrets.PREREVIEW_GITEA_TOKEN }}"
    assert "pip" not in WORKFLOW.read_text()


def test_the_example_workflow_passes_the_github_workflow_schema() -> None:
    """Gitea/Forgejo Actions take GitHub's workflow syntax: check-jsonschema's vendored schema applies."""
    from tests.ci_tools import tool

    proc = subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_the_example_posts_a_review_from_its_defaults(
    make_repo: Callable[..., Path], tmp_path: Path, prereview_image
) -> None:
    """The repository's .prereview.yml (at the base) picks the scripted model; the rest is the example."""
    repo = make_repo({"geometry.py": BASE, ".prereview.yml": yaml.safe_dump(SCRIPTED)}, {"geometry.py": HEAD})
    pr = PR(repo, rev(repo, "HEAD~1"), rev(repo), tmp_path / "unused.yml", tmp_path)
    with pr.fake() as fake:
        runner_only = ("PATH", "PYTHONPATH", "PREREVIEW_GITEA_TOKEN")  # the image has its own prereview
        env = {k: v for k, v in pr.env(fake).items() if k not in runner_only}
        env["HOME"] = str(tmp_path / "home")
        run = workflow_job(
            _workflow(),
            "review",
            workspace=repo,
            env=env,
            secrets={"PREREVIEW_GITEA_TOKEN": pr.env(fake)["PREREVIEW_GITEA_TOKEN"]},
            images={IMAGE: prereview_image},
            cache=CacheStore(tmp_path / "cache-store"),
        )
        assert run.ok, run.log
        assert fake.reviews, run.log
        assert sum(SUMMARY_MARKER in c["body"] for c in fake.comments) == 1
        assert fake.violations == []


def _stub_image(tmp_path: Path, cache_dir: Path) -> Image:
    """The image's `python` (this checkout's bot, so `ci_model` is the real one), a `prereview` that says
    which cache dir it was given, and the image's ENV (PREREVIEW_CACHE_DIR)."""
    bin_dir = tmp_path / "image-bin"
    bin_dir.mkdir()
    # installed in the image; here this checkout, by PYTHONPATH (which `python -I` would ignore)
    python = f'#!/bin/sh\n[ "$1" = -I ] && shift\nPYTHONPATH="{ROOT}" exec "{sys.executable}" "$@"\n'
    (bin_dir / "python").write_text(python)
    (bin_dir / "prereview").write_text('#!/bin/sh\necho "prereview $* cache=$PREREVIEW_CACHE_DIR"\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return Image(path=[str(bin_dir)], env={"PREREVIEW_CACHE_DIR": str(cache_dir)})


def _model_run(tmp_path: Path, image_cache: Path, store: CacheStore):
    workspace = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    run = workflow_job(
        _workflow(),
        "review",
        workspace=workspace,
        env={"HOME": str(tmp_path / "home")},
        secrets={"PREREVIEW_GITEA_TOKEN": "t"},
        images={IMAGE: _stub_image(tmp_path, image_cache)},
        cache=store,
    )
    assert run.ok, run.log
    return run, workspace


def test_a_nomodel_image_keeps_the_model_in_the_workspace_cache(tmp_path: Path) -> None:
    """-nomodel: the image's cache dir holds no model, so the model goes to the workspace's .cache/prereview
    (here as an earlier run saved it), which the cache steps restore and save, not into the container."""
    (tmp_path / "image-cache" / "models").mkdir(parents=True)
    seed_model(tmp_path / "seed", catalog.DEFAULT_MODEL, tmp_path)
    store = CacheStore(tmp_path / "cache-store")
    restore = next(s for s in _workflow()["jobs"]["review"]["steps"] if s.get("id") == "model-cache")
    store.seed(restore["with"]["key"], {p.name: p for p in (tmp_path / "seed" / "models").iterdir()})
    run, workspace = _model_run(tmp_path, tmp_path / "image-cache", store)
    out = run.step("Review").out
    assert f"{catalog.DEFAULT_MODEL} already in the cache ({workspace}/.cache/prereview/models" in out, out
    assert f"prereview gitea cache={workspace}/.cache/prereview" in out, out
    assert list((tmp_path / "image-cache" / "models").iterdir()) == []
    assert not run.step("Save the model").ran, "restored: nothing saved again"


def test_the_cache_steps_pair_up_and_a_baked_model_is_used_in_place(tmp_path: Path) -> None:
    store = CacheStore(tmp_path / "cache-store")
    wf = _workflow()
    steps = {s.get("name"): s for s in wf["jobs"]["review"]["steps"]}
    assert steps["Save the model"]["with"] == steps["Restore the model"]["with"]
    assert steps["Restore the model"]["with"]["path"] == ".cache/prereview/models"
    assert "always()" in steps["Save the model"]["if"], "a failed review keeps the model it assembled"
    # the image with the model baked in: used where it is, the workspace's cache left alone, nothing saved
    seed_model(tmp_path / "baked", catalog.DEFAULT_MODEL, tmp_path)
    run, workspace = _model_run(tmp_path, tmp_path / "baked", store)
    assert f"prereview gitea cache={tmp_path / 'baked'}" in run.step("Review").out, run.log
    assert not (workspace / ".cache").exists() and store.saved == []
