"""The Gitea/Forgejo Actions example workflow: it parses, runs on pull requests, runs `prereview gitea` in
the release image, and (rehearsed) posts a review from its defaults against the emulated Gitea."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from bot.render.markdown import SUMMARY_MARKER
from tests.ci.image import IMAGE
from tests.ci.runner import workflow_job

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
        )
        assert run.ok, run.log
        assert fake.reviews, run.log
        assert sum(SUMMARY_MARKER in c["body"] for c in fake.comments) == 1
        assert fake.violations == []
