"""The includable CI template: an MR-pipeline job that caches, runs `prereview gitlab`, reports quality."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from bot.config import GitLabConfig
from tests.ci_tools import ROOT, tool

TEMPLATE = ROOT / "templates" / "prereview.gitlab-ci.yml"


def _schema_check(path: Path) -> subprocess.CompletedProcess[str]:
    # check-jsonschema ships GitLab's own CI schema (vendor.gitlab-ci); no download.
    return subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", "vendor.gitlab-ci", str(path)],
        capture_output=True,
        text=True,
    )


def test_template_passes_gitlab_ci_schema() -> None:
    proc = _schema_check(TEMPLATE)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_schema_check_catches_a_bad_job(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gitlab-ci.yml"
    bad.write_text("job:\n  script: [true]\n  rules:\n    - iff: $CI\n  cache:\n    paths: 3\n")
    assert _schema_check(bad).returncode != 0


def test_template_job() -> None:
    doc = yaml.safe_load(TEMPLATE.read_text())
    job = doc["prereview"]
    [rule] = job["rules"]
    assert '$CI_PIPELINE_SOURCE == "merge_request_event"' in rule["if"]
    # drafts wait unless asked for
    assert '$CI_MERGE_REQUEST_DRAFT != "true"' in rule["if"] and "$PREREVIEW_REVIEW_DRAFTS" in rule["if"]
    assert doc["variables"]["PREREVIEW_REVIEW_DRAFTS"] == "false"
    script = "\n".join(job["script"])
    assert "bot.cli.shellwords PREREVIEW_ARGS --" in script and 'prereview" gitlab' in script
    assert "CI_MERGE_REQUEST_SOURCE_PROJECT_ID" in script  # the fork warning
    assert job["artifacts"]["reports"]["codequality"] == GitLabConfig().codequality_path
    assert job["artifacts"]["when"] == "always"  # the report matters most when the job fails
    assert job["image"] == "$PREREVIEW_IMAGE"
    cached = {p for c in job["cache"] for p in c["paths"]}
    assert cached == {".cache/prereview-venv", ".cache/prereview-wheels", ".cache/prereview/models"}
    keys = " ".join(c["key"] for c in job["cache"])
    for var in (
        "$PREREVIEW_PYTHON_VERSION",
        "$PREREVIEW_LLAMA_CPP_VERSION",
        "$PREREVIEW_MODEL",
        "$PREREVIEW_VERSION",
    ):
        assert var in keys
    assert job["variables"]["PREREVIEW_CACHE_DIR"].endswith(".cache/prereview")
    assert "PREREVIEW_GITLAB_TOKEN" not in str(doc.get("variables"))  # a secret belongs in CI/CD settings


def test_template_pins_match_the_project() -> None:
    doc = yaml.safe_load(TEMPLATE.read_text())["variables"]
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'llama = ["llama-cpp-python=={doc["PREREVIEW_LLAMA_CPP_VERSION"]}"]' in pyproject
    assert re.search(rf'^version = "{re.escape(doc["PREREVIEW_VERSION"])}"$', pyproject, re.M)
    assert f"semgrep=={doc['PREREVIEW_SEMGREP_VERSION']}" in (ROOT / "Makefile").read_text()
    assert "include:" in TEMPLATE.read_text() and "integrity:" in TEMPLATE.read_text()
