"""What an operator sees: JSON logs carrying the delivery and job id from the webhook to the job's end,
and `prereview jobs` listing queued, running and failed jobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli.root import main
from bot.config import ServerConfig
from bot.jobs.job import Job
from bot.server.queue import JobQueue, RunStats, make_huey
from tests.fakes.github_api import FakeGitHub
from tests.server.stack import Stack, comment_event, wait_for


def test_logs_are_json_lines_that_follow_a_delivery_to_its_jobs_end(tmp_path: Path) -> None:
    with FakeGitHub(repo="chmouel/scratchmyback") as gh:
        stack = Stack(tmp_path, gh.url)
        try:
            stack.start_server()
            stack.start_worker()
            r = stack.github(comment_event("/help", comment_id=41), delivery="delivery-41")
            assert r.status_code == 202
            job = r.json()["job"]
            wait_for(lambda: "job done" in stack.logs(), 60, "the job's end\n" + stack.logs())
            logs = stack.logs()
        finally:
            stack.stop()
    records = []
    for line in logs.splitlines():
        if line.startswith("{"):
            records.append(json.loads(line))
    ours = [r for r in records if r.get("delivery") == "delivery-41"]
    assert {r["job"] for r in ours} == {job}
    messages = [r["msg"] for r in ours]
    assert any("webhook accepted" in m for m in messages) and any("job done" in m for m in messages)
    assert all(r["pr"] == "github:chmouel/scratchmyback#1" for r in ours)


def test_prereview_jobs_lists_queued_and_failed_jobs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "q.sqlite3"
    cfg = ServerConfig(queue_path=str(path), job_attempts=1, coalesce_seconds=0)

    class Broken:
        def ack(self, job: Job) -> None:
            pass

        def run(self, job: Job) -> RunStats:
            raise RuntimeError("boom")

        def fail(self, job: Job, why: str) -> None:
            pass

    q = JobQueue(make_huey(cfg), cfg, runner_factory=Broken)
    failed = q.submit(Job("review", "github", "o/r", 1, head_sha="a" * 40, delivery="d-1"))
    q.huey.execute(q.huey.dequeue())
    queued = q.submit(Job("help", "github", "o/r", 2, comment_id=5))
    try:
        main(["jobs", "--queue-path", str(path), "--json"])
    except SystemExit as exc:
        assert not exc.code
    rows = {r["id"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert rows[failed]["state"] == "failed" and rows[failed]["reason"] == "crash"
    assert rows[failed]["delivery"] == "d-1" and rows[failed]["pr"] == "github:o/r#1"
    assert rows[queued]["state"] == "queued" and rows[queued]["kind"] == "help"
    main(["jobs", "--queue-path", str(path), "--state", "failed"])
    out = capsys.readouterr()
    assert failed[:12] in out.out and queued[:12] not in out.out and "1 job(s)" in out.err
