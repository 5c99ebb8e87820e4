"""kill -9 of a worker mid-job: the job completes after a restart, with no duplicate comments."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.github_api import FakeGitHub
from tests.server.stack import DIFF, RedisServer, Stack, comment_event, redis_binary, wait_for

REPO, PR = "chmouel/scratchmyback", 1


@pytest.fixture(params=["sqlite", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    if request.param == "sqlite":
        yield {"queue": "sqlite"}
        return
    if redis_binary() is None:
        pytest.skip("redis-server not installed (apt-get install redis-server; .ci/run installs it)")
    redis = RedisServer(tmp_path_factory.mktemp("redis"))
    yield {"queue": "redis", "redis_url": redis.url}
    redis.stop()


def test_killed_worker_job_completes_after_restart_without_duplicates(backend: dict, tmp_path) -> None:
    with FakeGitHub(repo=REPO, pr_number=PR, diff_text=DIFF, head_sha="c" * 40, base_sha="d" * 40) as gh:
        stack = Stack(tmp_path, gh.url, **backend)
        try:
            stack.start_server()
            worker = stack.start_worker()
            # The summary comment keeps failing (502, retried with backoff), so the job is caught after
            # its inline review was posted and before it finished.
            gh.fail("POST", rf"/issues/{PR}/comments$", 502, times=10_000)
            assert stack.github(comment_event("/review", comment_id=77)).status_code == 202
            wait_for(lambda: gh.reviews, 60, "the inline review\n" + stack.logs())
            stack.kill(worker)
            gh._failures.clear()
            assert not any("prereview:summary" in c["body"] for c in gh.issue_comments)
            stack.start_worker()
            wait_for(
                lambda: any("prereview:summary" in c["body"] for c in gh.issue_comments),
                60,
                "the summary after the restart\n" + stack.logs(),
            )
            assert len(gh.reviews) == 1
            assert len(gh.comments) == 1  # the retried job found its inline comment and did not repost it
            assert sum("prereview:summary" in c["body"] for c in gh.issue_comments) == 1
            assert "lost its worker" in stack.logs()
        finally:
            stack.stop()


def test_a_killed_worker_process_is_replaced_and_its_job_retried(tmp_path) -> None:
    """Only the process running the job dies (OOM killer, segfault): the consumer starts a new one."""
    import os
    import signal

    from bot.config import ServerConfig
    from bot.server.ledger import Ledger
    from bot.server.queue import make_huey

    with FakeGitHub(repo=REPO, pr_number=PR, diff_text=DIFF, head_sha="c" * 40, base_sha="d" * 40) as gh:
        stack = Stack(tmp_path, gh.url)
        try:
            stack.start_server()
            stack.start_worker()
            gh.fail("POST", rf"/issues/{PR}/comments$", 502, times=10_000)
            assert stack.github(comment_event("/review", comment_id=78)).status_code == 202
            wait_for(lambda: gh.reviews, 60, "the inline review\n" + stack.logs())
            ledger = Ledger(make_huey(ServerConfig(queue_path=str(tmp_path / "queue.sqlite3"))).storage)
            lease = ledger.lease(f"github:{REPO}#{PR}")
            assert lease is not None
            os.kill(int(lease.owner.rpartition(":")[2]), signal.SIGKILL)
            gh._failures.clear()
            wait_for(
                lambda: any("prereview:summary" in c["body"] for c in gh.issue_comments),
                60,
                "the summary from the replacement process\n" + stack.logs(),
            )
            assert (len(gh.reviews), len(gh.comments)) == (1, 1)
        finally:
            stack.stop()


def test_serve_with_workers_answers_and_stops_them_on_sigterm(tmp_path) -> None:
    import os
    import signal

    from bot.server.forge_session import replied_to

    with FakeGitHub(repo=REPO, pr_number=PR, diff_text=DIFF) as gh:
        stack = Stack(tmp_path, gh.url)
        try:
            stack.start_server(workers=1)
            assert stack.github(comment_event("/help", comment_id=5)).status_code == 202
            wait_for(lambda: 5 in replied_to([c["body"] for c in gh.issue_comments]), 60, "the help reply")
            assert stack.server is not None
            stack.server.send_signal(signal.SIGTERM)
            assert stack.server.wait(40) == 0
            with pytest.raises(ProcessLookupError):  # the workers it started are gone too
                os.killpg(stack.server.pid, 0)
        finally:
            stack.stop()
