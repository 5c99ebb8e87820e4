"""Reading GitLab's predefined CI variables (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.forges.gitlab.api import api_root
from bot.forges.gitlab.ci import Pipeline, ssl_verify_from, token_from
from bot.types import PrereviewError

ENV = {
    "CI_API_V4_URL": "https://git.example.com/gitlab/api/v4",
    "CI_PROJECT_ID": "12",
    "CI_MERGE_REQUEST_IID": "3",
    "CI_MERGE_REQUEST_DIFF_BASE_SHA": "a" * 40,
    "CI_COMMIT_SHA": "b" * 40,
    "CI_PROJECT_DIR": "/builds/g/p",
    "CI_PIPELINE_SOURCE": "merge_request_event",
}


def test_pipeline_from_env() -> None:
    p = Pipeline.from_env(ENV)
    assert (p.api_url, p.project, p.mr_iid, p.base_sha, p.head_sha) == (
        ENV["CI_API_V4_URL"],
        "12",
        3,
        "a" * 40,
        "b" * 40,
    )
    assert p.project_dir == Path("/builds/g/p")
    merged = Pipeline.from_env({**ENV, "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA": "c" * 40})
    assert merged.head_sha == "c" * 40
    assert Pipeline.from_env({**ENV, "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA": ""}).head_sha == "b" * 40
    assert (
        Pipeline.from_env({k: v for k, v in ENV.items() if k != "CI_MERGE_REQUEST_IID"}, mr_iid=9).mr_iid == 9
    )
    no_api = {k: v for k, v in ENV.items() if k != "CI_API_V4_URL"}
    assert Pipeline.from_env({**no_api, "CI_SERVER_URL": "https://h/"}).api_url == "https://h/api/v4"


@pytest.mark.parametrize(
    "missing", ["CI_MERGE_REQUEST_IID", "CI_API_V4_URL", "CI_PROJECT_ID", "CI_COMMIT_SHA"]
)
def test_missing_variables_are_one_line_errors(missing: str) -> None:
    with pytest.raises(
        PrereviewError, match=missing if missing != "CI_MERGE_REQUEST_IID" else "merge_request_event"
    ):
        Pipeline.from_env({k: v for k, v in ENV.items() if k != missing})


def test_token_and_ca(tmp_path: Path) -> None:
    assert token_from({"GITLAB_TOKEN": "t2"}) == "t2"
    assert token_from({"PREREVIEW_GITLAB_TOKEN": "t1", "GITLAB_TOKEN": "t2"}) == "t1"
    assert token_from({"PREREVIEW_GITLAB_TOKEN": "  "}) is None
    assert ssl_verify_from({}) is True
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    assert ssl_verify_from({"CI_SERVER_TLS_CA_FILE": str(ca), "REQUESTS_CA_BUNDLE": "/nope"}) == str(ca)
    assert ssl_verify_from({"REQUESTS_CA_BUNDLE": str(ca)}) == str(ca)
    with pytest.raises(PrereviewError, match="CI_SERVER_TLS_CA_FILE points at /nope"):
        ssl_verify_from({"CI_SERVER_TLS_CA_FILE": "/nope"})


def test_api_root() -> None:
    assert api_root("https://h/gitlab/api/v4/") == "https://h/gitlab"
    assert api_root("https://gitlab.com") == "https://gitlab.com"
