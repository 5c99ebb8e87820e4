"""The CI environment -> the pull request a job reviews (Jenkins, or prereview's own variables)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.forges.bitbucket.ci import Job, from_env
from bot.types import PrereviewError


def test_jenkins_pull_request_build() -> None:
    env = {
        "CHANGE_ID": "12",
        "CHANGE_URL": "https://git.example.com/bitbucket/projects/PRJ/repos/widgets/pull-requests/12/overview",
        "CHANGE_TARGET": "main",
        "WORKSPACE": "/var/jenkins/ws",
    }
    assert from_env(env) == Job(
        "https://git.example.com/bitbucket", "PRJ/widgets", 12, Path("/var/jenkins/ws"), "main"
    )


def test_a_personal_repository() -> None:
    job = from_env({"CHANGE_URL": "https://bb.example.com/users/alice/repos/tools/pull-requests/4"})
    assert isinstance(job, Job) and (job.repo, job.number) == ("~alice/tools", 4)


def test_prereviews_own_variables_win() -> None:
    env = {
        "PREREVIEW_BITBUCKET_URL": "https://bb.example.com/",
        "PREREVIEW_BITBUCKET_REPO": "OPS/infra",
        "PREREVIEW_BITBUCKET_PR": "7",
        "CHANGE_ID": "12",
    }
    job = from_env(env)
    assert isinstance(job, Job) and (job.server_url, job.repo, job.number) == (
        "https://bb.example.com",
        "OPS/infra",
        7,
    )


def test_a_branch_build_is_not_an_error() -> None:
    assert "not a pull request build" in str(from_env({"BRANCH_NAME": "main"}))


def test_a_missing_server_names_the_variable() -> None:
    with pytest.raises(PrereviewError, match="PREREVIEW_BITBUCKET_URL"):
        from_env({"CHANGE_ID": "3", "PREREVIEW_BITBUCKET_REPO": "PRJ/x"})


def test_the_example_jenkinsfile_runs_prereview_bitbucket_on_pull_requests_with_the_token_bound() -> None:
    text = (Path(__file__).resolve().parents[2] / "examples" / "bitbucket" / "Jenkinsfile").read_text()
    assert "when { changeRequest() }" in text and "sh 'prereview bitbucket'" in text
    assert "variable: 'PREREVIEW_BITBUCKET_TOKEN'" in text and "withCredentials" in text
    assert "pip install" not in text  # the release image: nothing installed by name


def test_a_repository_that_is_not_project_slug_is_refused_before_any_request() -> None:
    from bot.forges.bitbucket.api import BitbucketApi

    for bad in ("PRJ", "PRJ/a/b", "../x", "PRJ/.."):
        with pytest.raises(PrereviewError, match="PREREVIEW_BITBUCKET_REPO"):
            BitbucketApi("https://bb.example.com", "t", bad)


def test_a_webhook_triggered_build_reads_its_event_from_the_body() -> None:
    import json

    from bot.forges.bitbucket.ci import comment_event

    data = json.loads(
        (Path(__file__).resolve().parents[1] / "data/bitbucket/pr_comment_added.json").read_text()
    )
    ev = comment_event({"PREREVIEW_BITBUCKET_EVENT": json.dumps(data)})
    assert ev is not None and (ev.kind, ev.repo, ev.number, ev.body) == (
        "comment",
        "PRJ/widgets",
        3,
        "/review",
    )
    opened = {**data, "eventKey": "pr:opened"}
    ev = comment_event({"PREREVIEW_BITBUCKET_EVENT": json.dumps(opened)})
    assert ev is not None and ev.kind == "pr"
    merged = comment_event({"PREREVIEW_BITBUCKET_EVENT": json.dumps({**data, "eventKey": "pr:merged"})})
    assert merged is not None and merged.kind == "none"
    assert comment_event({}) is None
    with pytest.raises(PrereviewError, match="PREREVIEW_BITBUCKET_EVENT is not JSON"):
        comment_event({"PREREVIEW_BITBUCKET_EVENT": "event=1"})


def test_an_events_repository_must_be_the_pinned_one() -> None:
    env = {"PREREVIEW_BITBUCKET_URL": "https://bb.example.com", "PREREVIEW_BITBUCKET_REPO": "PRJ/widgets"}
    job = from_env(env, pr=3, repo="prj/WIDGETS")
    assert isinstance(job, Job) and (job.repo, job.number) == ("PRJ/widgets", 3)
    with pytest.raises(PrereviewError, match="not PREREVIEW_BITBUCKET_REPO=PRJ/widgets"):
        from_env(env, pr=3, repo="OPS/infra")
