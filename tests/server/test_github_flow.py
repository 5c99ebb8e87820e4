"""The running server and worker against the emulated GitHub: signed real payloads in, reviews out."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator

import pytest

from bot.server.forge_session import replied_to
from bot.server.verify import github_signature
from tests.fakes.github_api import FakeGitHub
from tests.server.stack import (
    DIFF,
    NEW_FILE,
    SECRET,
    RedisServer,
    Stack,
    comment_event,
    payload,
    redis_binary,
    wait_for,
)

REPO, PR = "chmouel/scratchmyback", 1
_ids = itertools.count(5000)


@pytest.fixture(scope="module", params=["sqlite", "redis"])
def env(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Stack, FakeGitHub]]:
    """The same tests with the embedded SQLite queue and with a real redis-server."""
    redis = None
    backend: dict[str, str] = {"queue": request.param}
    if request.param == "redis":
        if redis_binary() is None:
            pytest.skip("redis-server not installed (apt-get install redis-server; .ci/run installs it)")
        redis = RedisServer(tmp_path_factory.mktemp("redis"))
        backend["redis_url"] = redis.url
    with FakeGitHub(repo=REPO, pr_number=PR, diff_text=DIFF, head_sha="a" * 40, base_sha="b" * 40) as fake:
        s = Stack(tmp_path_factory.mktemp("stack"), fake.url, **backend)  # type: ignore[arg-type]
        s.start_server()
        s.start_worker(2)
        yield s, fake
        s.stop()
    if redis is not None:
        redis.stop()


@pytest.fixture
def stack(env: tuple[Stack, FakeGitHub]) -> Stack:
    return env[0]


@pytest.fixture
def gh(env: tuple[Stack, FakeGitHub]) -> FakeGitHub:
    return env[1]


def replies(gh: FakeGitHub) -> list[int]:
    out: list[int] = []
    for c in gh.issue_comments:
        out += sorted(replied_to([c["body"]]))
    return out


def ask(stack: Stack, gh: FakeGitHub, body: str, association: str = "OWNER") -> int:
    """Send a command comment and wait for its reply (a barrier: earlier jobs of this PR are done)."""
    cid = next(_ids)
    assert stack.github(comment_event(body, association=association, comment_id=cid)).status_code == 202
    wait_for(lambda: cid in replies(gh), 60, f"the reply to comment {cid}\n{stack.logs()}")
    return cid


def test_owner_review_posts_a_review(stack: Stack, gh: FakeGitHub) -> None:
    cid = next(_ids)
    r = stack.github(comment_event("/review", comment_id=cid))
    assert r.status_code == 202, r.text
    wait_for(
        lambda: gh.reviews and any("prereview:summary" in c["body"] for c in gh.issue_comments),
        60,
        "a review on the emulated GitHub\n" + stack.logs(),
    )
    assert gh.reviews[0]["state"] == "COMMENTED"
    assert [c["path"] for c in gh.comments] == ["app.py"]
    assert {"content": "eyes", "subject_id": cid} in [
        {"content": x["content"], "subject_id": x["subject_id"]} for x in gh.reactions
    ]
    assert not gh.schema_errors


def test_incremental_review_reviews_only_the_new_commits(stack: Stack, gh: FakeGitHub) -> None:
    assert gh.comments, "runs after the first review"
    gh.set_head("e" * 40, DIFF + NEW_FILE)
    cid = next(_ids)
    assert stack.github(comment_event("/review -i", comment_id=cid)).status_code == 202
    wait_for(
        lambda: any(c["path"] == "new.py" for c in gh.comments), 60, "a comment on new.py\n" + stack.logs()
    )
    wait_for(
        lambda: any("Incremental review" in c["body"] for c in gh.issue_comments),
        60,
        "the incremental summary",
    )
    assert [c["path"] for c in gh.comments] == ["app.py", "new.py"]
    assert all("prereview:resolved" not in c["body"] for c in gh.comments)  # app.py was not re-reviewed
    cid = next(_ids)
    stack.github(comment_event("/review -i", comment_id=cid))
    wait_for(lambda: cid in replies(gh), 60, "the nothing-new reply")


def test_forged_or_missing_signature_is_401_and_no_job(stack: Stack, gh: FakeGitHub) -> None:
    forged, missing = next(_ids), next(_ids)
    r1 = stack.github(comment_event("/review", comment_id=forged), signature="sha256=" + "0" * 64)
    r2 = stack.github(comment_event("/review", comment_id=missing), signature=None)
    other = github_signature(SECRET, comment_event("/help", comment_id=forged))
    r3 = stack.github(
        comment_event("/review", comment_id=forged), signature=other
    )  # another body's signature
    assert (r1.status_code, r2.status_code, r3.status_code) == (401, 401, 401)
    reviews = len(gh.reviews)
    ask(stack, gh, "/help")  # barrier
    reacted = {x["subject_id"] for x in gh.reactions}
    assert forged not in reacted and missing not in reacted
    assert len(gh.reviews) == reviews


def test_none_author_gets_one_refusal_and_no_review(stack: Stack, gh: FakeGitHub) -> None:
    reviews = len(gh.reviews)
    cid = ask(stack, gh, "/review", association="NONE")
    reply = next(c["body"] for c in gh.issue_comments if cid in replied_to([c["body"]]))
    assert "write access" in reply
    assert replies(gh).count(cid) == 1
    assert len(gh.reviews) == reviews


def test_replayed_delivery_makes_one_job(stack: Stack, gh: FakeGitHub) -> None:
    cid = next(_ids)
    body = comment_event("/help", comment_id=cid)
    first = stack.github(body, delivery="replayed-delivery-1")
    again = stack.github(body, delivery="replayed-delivery-1")
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json()["status"] == "duplicate delivery"
    wait_for(lambda: cid in replies(gh), 60, "the reply")
    ask(stack, gh, "/help")  # barrier
    assert replies(gh).count(cid) == 1


def test_bot_comments_and_other_bots_commands_are_ignored(stack: Stack, gh: FakeGitHub) -> None:
    data = json.loads(comment_event("/review", comment_id=next(_ids)))
    data["comment"]["user"].update(login="prereview[bot]", type="Bot")
    r = stack.github(json.dumps(data).encode())
    assert (r.status_code, r.json()["status"]) == (200, "comment by a bot")
    r = stack.github(
        comment_event("/retest", comment_id=next(_ids))
    )  # the real payload: another bot's command
    assert (r.status_code, r.json()["status"]) == (200, "no command")


def test_pause_stops_auto_review_and_resume_restarts_it(stack: Stack, gh: FakeGitHub) -> None:
    sync = payload("pull_request.synchronize.octokit.json")
    sync["repository"]["full_name"], sync["number"], sync["pull_request"]["number"] = REPO, PR, PR
    ask(stack, gh, "/pause")
    r = stack.github(json.dumps(sync).encode(), "pull_request")
    assert (r.status_code, r.json()["status"]) == (200, "auto-review is paused on this PR")
    ask(stack, gh, "/resume")
    r = stack.github(json.dumps(sync).encode(), "pull_request")
    assert r.status_code == 202


def test_burst_of_50_webhooks_each_processed_exactly_once(stack: Stack, gh: FakeGitHub) -> None:
    ids = [next(_ids) for _ in range(50)]
    for i, cid in enumerate(ids):
        body = "/help" if i % 2 else f"/ask what does change {i} do?"
        assert stack.github(comment_event(body, comment_id=cid)).status_code == 202
    wait_for(lambda: set(ids) <= set(replies(gh)), 120, "50 replies\n" + stack.logs())
    ask(stack, gh, "/help")  # barrier: nothing of the burst is still running
    got = replies(gh)
    assert all(got.count(cid) == 1 for cid in ids)
    assert sum(1 for x in gh.reactions if x["subject_id"] in set(ids)) == 50
    metrics = stack.metrics()
    assert "prereview_queue_depth" in metrics and 'prereview_jobs_total{outcome="done"}' in metrics


def test_metrics_and_health(stack: Stack) -> None:
    assert stack.http.get("/healthz").json()["status"] == "ok"
    text = stack.metrics()
    for name in (
        "prereview_job_duration_seconds_bucket",
        "prereview_model_tokens_total",
        "prereview_tokens_per_second",
        'prereview_jobs_total{outcome="failed"}',
        "prereview_webhooks_total",
    ):
        assert name in text
