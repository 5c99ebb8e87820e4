"""The includable CI template: an MR-pipeline job that caches, runs `prereview gitlab`, reports quality."""

from __future__ import annotations

from pathlib import Path

import yaml

from bot.config import GitLabConfig

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "prereview.gitlab-ci.yml"


def test_template_job() -> None:
    doc = yaml.safe_load(TEMPLATE.read_text())
    job = doc["prereview"]
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert any("prereview gitlab" in line for line in job["script"])
    assert job["artifacts"]["reports"]["codequality"] == GitLabConfig().codequality_path
    assert job["artifacts"]["when"] == "always"  # the report matters most when the job fails
    cached = {p for c in job["cache"] for p in c["paths"]}
    assert cached == {".cache/pip", ".cache/prereview"}
    assert job["variables"]["PIP_CACHE_DIR"].endswith(".cache/pip")
    assert job["variables"]["PREREVIEW_CACHE_DIR"].endswith(".cache/prereview")
    assert "PREREVIEW_GITLAB_TOKEN" not in str(doc.get("variables"))  # a secret belongs in CI/CD settings
