"""Forge rate limits and outages name their real cause and are waited out (bounded), then handed back
to the queue, which re-queues the job for when the forge says; a 404 on a write is not a permission
problem. Against the emulated GitHub and GitLab."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bot.config import ServerConfig
from bot.forges.base import PermissionDenied
from bot.forges.github.api import GitHubAPI
from bot.forges.gitlab.forge import GitLabForge
from bot.jobs.job import Job
from bot.server.ledger import JOB
from bot.server.queue import JobQueue, RunStats, make_huey
from bot.types import PrereviewError, Throttled
from tests.fakes.github_api import FakeGitHub
from tests.fakes.gitlab_api import TOKEN, FakeGitLab


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def test_githubs_primary_rate_limit_is_waited_for_then_named_not_blamed_on_the_token() -> None:
    with FakeGitHub() as gh:
        sleeps = Sleeps()
        api = GitHubAPI(gh.url, "ghs_test", gh.repo, sleep=sleeps, write_interval=0)
        soon = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + 30)}
        gh.fail("POST", r"/issues/1/comments$", 403, headers=soon, message="API rate limit exceeded for user")
        api.create_issue_comment(1, "waited")
        assert len(sleeps) == 1 and 25 <= sleeps[0] <= 31  # until x-ratelimit-reset
        assert [c["body"] for c in gh.issue_comments] == ["waited"]
        later = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + 3000)}
        gh.fail(
            "POST", r"/issues/1/comments$", 403, headers=later, message="API rate limit exceeded for user"
        )
        with pytest.raises(Throttled, match="rate limit") as caught:
            api.create_issue_comment(1, "too late")
        assert not isinstance(caught.value, PermissionDenied)
        assert "GITHUB_TOKEN" not in str(caught.value) and "pull-requests: write" not in str(caught.value)
        assert 2900 < caught.value.retry_after <= 3000


def test_a_404_on_a_github_write_is_not_blamed_on_permissions() -> None:
    with FakeGitHub() as gh:
        api = GitHubAPI(gh.url, "ghs_test", gh.repo, sleep=Sleeps(), write_interval=0)
        with pytest.raises(PrereviewError, match="no longer exists") as caught:
            api.reply_to_review_comment(1, 424242, "an answer to a deleted thread")
        assert not isinstance(caught.value, PermissionDenied)
        assert "pull-requests: write" not in str(caught.value)


def test_gitlab_retry_after_is_obeyed_and_an_outage_hands_the_job_back() -> None:
    with FakeGitLab() as gl:
        sleeps = Sleeps()
        forge = GitLabForge(gl.url, TOKEN, gl.project_id, sleep=sleeps)
        gl.fail("GET", r"/merge_requests/\d+$", 503, headers={"Retry-After": "7"})
        forge.merge_request(gl.mr_iid)
        assert sleeps == [7.0]
        gl.fail("GET", r"/merge_requests/\d+$", 503, times=5)  # every try
        with pytest.raises(Throttled, match="overloaded or down") as caught:
            forge.merge_request(gl.mr_iid)
        assert caught.value.retry_after >= 60
        gl.fail("GET", r"/merge_requests/\d+$", 429, headers={"Retry-After": "900"}, times=1)
        with pytest.raises(Throttled, match="rate limit") as limited:
            forge.merge_request(gl.mr_iid)
        assert limited.value.retry_after == 900


def test_the_queue_requeues_a_throttled_job_for_when_the_forge_says(tmp_path: Path) -> None:
    tries: list[float] = []

    class Runner:
        def ack(self, job: Job) -> None:
            pass

        def run(self, job: Job) -> RunStats:
            tries.append(time.monotonic())
            if len(tries) == 1:
                raise Throttled("GitHub's rate limit for this token is used up", retry_after=1.0)
            return RunStats()

        def fail(self, job: Job, why: str) -> None:
            raise AssertionError(f"told {why!r}")

    cfg = ServerConfig(queue_path=str(tmp_path / "q.sqlite3"), retry_seconds=0.1, job_attempts=3)
    q = JobQueue(make_huey(cfg), cfg, runner_factory=Runner)
    job = q.submit(Job("review", "github", "o/r", 1, head_sha="a" * 40))
    q.huey.execute(q.huey.dequeue())
    rec = q.ledger.get(JOB + job)
    assert rec is not None and rec["state"] == "queued" and rec["attempt"] == 1
    task = q.huey.dequeue()
    assert task is not None and task.eta is not None  # a scheduled message: for when the forge said
    assert (task.eta - q.huey._get_timestamp()).total_seconds() > 0.8
    time.sleep(1.1)
    q.huey.execute(task)
    assert len(tries) == 2 and tries[1] - tries[0] >= 1.0
    assert q.ledger.get(JOB + job) is None
