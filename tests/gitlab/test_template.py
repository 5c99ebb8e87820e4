"""The GitLab CI/CD component: an MR-pipeline job that runs in the release image by default, caches what
it installs otherwise, runs `prereview gitlab` and reports Code Quality."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from bot.config import GitLabConfig
from tests.ci.image import IMAGE
from tests.ci.runner import load_component
from tests.ci_tools import ROOT, tool

TEMPLATE = ROOT / "templates" / "prereview.yml"


def _schema_check(path: Path) -> subprocess.CompletedProcess[str]:
    # check-jsonschema ships GitLab's own CI schema (vendor.gitlab-ci); no download.
    return subprocess.run(
        [tool("check-jsonschema"), "--builtin-schema", "vendor.gitlab-ci", str(path)],
        capture_output=True,
        text=True,
    )


def test_both_documents_pass_gitlab_ci_schema(tmp_path: Path) -> None:
    """The spec header and the jobs are two YAML documents; the schema checks one file at a time."""
    header, sep, body = TEMPLATE.read_text().partition("\n---\n")
    assert sep and "spec:" in header
    for name, text in (("header.yml", header), ("body.yml", body)):
        (tmp_path / name).write_text(text)
        proc = _schema_check(tmp_path / name)
        assert proc.returncode == 0, name + proc.stdout + proc.stderr


def test_schema_check_catches_a_bad_job(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gitlab-ci.yml"
    bad.write_text("job:\n  script: [true]\n  rules:\n    - iff: $CI\n  cache:\n    paths: 3\n")
    assert _schema_check(bad).returncode != 0


def test_the_component_job() -> None:
    inputs = yaml.safe_load(TEMPLATE.read_text().partition("\n---\n")[0])["spec"]["inputs"]
    assert inputs["image"]["default"] == IMAGE  # the release image: nothing installed, the model baked in
    assert inputs["source"]["default"] == ""  # never a package index name
    job = load_component(TEMPLATE)["prereview"]
    [rule] = job["rules"]
    assert '$CI_PIPELINE_SOURCE == "merge_request_event"' in rule["if"]
    # drafts wait unless asked for
    assert '$CI_MERGE_REQUEST_DRAFT != "true"' in rule["if"] and "$PREREVIEW_REVIEW_DRAFTS" in rule["if"]
    assert job["variables"]["PREREVIEW_REVIEW_DRAFTS"] == "false"
    script = "\n".join(job["script"])
    assert "bot.cli.shellwords PREREVIEW_ARGS --" in script and 'prereview" gitlab' in script
    assert "CI_MERGE_REQUEST_SOURCE_PROJECT_ID" in script  # the fork warning
    assert job["artifacts"]["reports"]["codequality"] == GitLabConfig().codequality_path
    assert job["artifacts"]["when"] == "always"  # the report matters most when the job fails
    assert job["image"] == IMAGE
    # the image's PREREVIEW_CACHE_DIR (its baked model) is not overridden by the job
    assert "PREREVIEW_CACHE_DIR" not in job["variables"]
    assert job["variables"]["SEMGREP_ENABLE_VERSION_CHECK"] == "0"
    assert not re.search(r"pip[^\n]*install[^\n]*prereview(==|\[[^\]]*\]==)", script), "no install by name"
    cached = {p for c in job["cache"] for p in c["paths"]}
    assert cached == {
        ".cache/prereview-venv",
        ".cache/prereview-wheels",
        ".cache/prereview/models",
        ".cache/prereview-envs",
    }
    assert all(c["when"] == "always" for c in job["cache"]), "a failed job keeps what it built"
    keys = " ".join(c["key"] for c in job["cache"])
    for var in ("$PREREVIEW_LLAMA_CPP_VERSION", "$PREREVIEW_VERSION", "qwen2.5-coder-1.5b", "-cpu-"):
        assert var in keys
    assert "/" not in keys  # GitLab refuses a "/" in a cache key
    assert "PREREVIEW_GITLAB_TOKEN" not in str(job.get("variables"))  # a secret belongs in CI/CD settings


def test_the_component_pins_match_the_project() -> None:
    job = load_component(TEMPLATE)["prereview"]["variables"]
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'llama = ["llama-cpp-python=={job["PREREVIEW_LLAMA_CPP_VERSION"]}"]' in pyproject
    version = re.search(r'^version = "([^"]+)"$', pyproject, re.M)
    assert version and job["PREREVIEW_VERSION"] == version[1]
    assert IMAGE.endswith(f":v{version[1]}"), "the default image is this release's"
    assert f"semgrep=={job['PREREVIEW_SEMGREP_VERSION']}" in (ROOT / "Makefile").read_text()
    text = TEMPLATE.read_text()
    assert "component:" in text and "integrity:" in text
