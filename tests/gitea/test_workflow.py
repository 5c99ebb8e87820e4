"""The Gitea/Forgejo Actions example workflow: it parses, runs on pull requests, runs `prereview gitea`."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "gitea" / ".gitea" / "workflows" / "prereview.yml"


def test_the_example_workflow_runs_prereview_gitea_on_pull_requests() -> None:
    wf = yaml.safe_load(WORKFLOW.read_text())
    on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads a bare `on` as true
    assert set(on["pull_request"]["types"]) >= {"opened", "synchronize", "reopened"}
    [job] = wf["jobs"].values()
    steps = job["steps"]
    checkout = next(s for s in steps if str(s.get("uses", "")).startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    [review] = [s for s in steps if "prereview gitea" in str(s.get("run", ""))]
    assert review["run"].strip() == "prereview gitea"
    assert review["env"]["PREREVIEW_GITEA_TOKEN"] == "${{ secrets.PREREVIEW_GITEA_TOKEN }}"
    install = next(s for s in steps if "pip" in str(s.get("run", "")))
    version = next(
        ln.split('"')[1]
        for ln in (ROOT / "pyproject.toml").read_text().splitlines()
        if ln.startswith("version =")
    )
    assert f"prereview[model]=={version}" in install["run"]  # the example installs this release


def test_the_example_workflow_passes_the_github_workflow_schema() -> None:
    """Gitea/Forgejo Actions take GitHub's workflow syntax: check-jsonschema's vendored schema applies."""
    import subprocess

    from tests.ci_tools import tool

    proc = subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
