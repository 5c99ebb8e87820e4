"""The webhook server and its worker against the emulated Bitbucket Data Center: signed deliveries in
(`POST /webhooks/bitbucket`), a queued job, the worker's review (inline comments, the summary, the Code
Insights report) and replies out; a command from someone without write access is refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.forges.bitbucket.markers import from_bitbucket
from bot.forges.bitbucket.webhook import signature
from bot.server.forge_session import replied_to
from tests.fakes.bitbucket_api import TOKEN, FakeBitbucket
from tests.server.stack import DIFF, Stack, wait_for

DATA = Path(__file__).resolve().parents[1] / "data" / "bitbucket"
SECRET = "bitbucket-hook-secret"


@pytest.fixture(scope="module")
def bb() -> Iterator[FakeBitbucket]:
    with FakeBitbucket(diff_text=DIFF, base_sha="b" * 40, head_sha="a" * 40) as fake:
        yield fake


@pytest.fixture(scope="module")
def stack(bb: FakeBitbucket, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("bitbucket")
    s = Stack(
        tmp, "http://127.0.0.1:9", server={"bitbucket_url": bb.url, "bitbucket_git_url": f"file://{tmp}/r"}
    )
    s.env.update(PREREVIEW_BITBUCKET_TOKEN=TOKEN, PREREVIEW_BITBUCKET_WEBHOOK_SECRET=SECRET)
    s.start_server()
    s.start_worker()
    yield s
    s.stop()


def send(stack: Stack, body: bytes, key: str = "pr:comment:added", *, secret: str = SECRET) -> object:
    headers = {
        "Content-Type": "application/json",
        "X-Event-Key": key,
        "X-Request-Id": f"req-{hash(body)}",
        "X-Hub-Signature": signature(secret, body),
    }
    return stack.http.post("/webhooks/bitbucket", content=body, headers=headers)


def comment(bb: FakeBitbucket, text: str, user: str) -> tuple[int, bytes]:
    data = json.loads((DATA / "pr_comment_added.json").read_text())
    cid = bb.add_comment(text, author=user)["id"]  # the comment exists before its webhook arrives
    data["comment"].update(text=text, id=cid, author=bb.user(user))
    data["actor"] = bb.user(user)
    data["pullRequest"]["id"] = bb.number
    return cid, json.dumps(data).encode()


def replies_to(bb: FakeBitbucket, cid: int) -> list[str]:
    root = next(c for c in bb.comments if c["id"] == cid)
    return [
        from_bitbucket(r["text"]) for r in root["comments"] if cid in replied_to([from_bitbucket(r["text"])])
    ]


def test_a_bad_signature_is_401_and_the_ping_is_answered(stack: Stack, bb: FakeBitbucket) -> None:
    _, body = comment(bb, "/help", "maintainer")
    r = send(stack, body, secret="wrong")
    assert r.status_code == 401 and "X-Hub-Signature" in r.json()["status"]  # type: ignore[attr-defined]
    ping = send(stack, b"{}", "diagnostics:ping")
    assert ping.status_code == 200 and ping.json()["status"] == "pong"  # type: ignore[attr-defined]


def test_a_maintainers_review_is_queued_and_the_worker_posts_it(stack: Stack, bb: FakeBitbucket) -> None:
    cid, body = comment(bb, "/review", "maintainer")
    r = send(stack, body)
    assert r.status_code == 202 and r.json()["status"] == "review queued", r.text  # type: ignore[attr-defined]
    wait_for(lambda: bb.inline, 90, "an inline comment\n" + stack.logs())
    [c] = bb.inline
    anchor = bb.anchors[c["id"]]
    assert (anchor["path"], anchor["line"], anchor["lineType"]) == ("app.py", 2, "ADDED")
    wait_for(lambda: ("a" * 40, "prereview") in bb.reports, 30, "the Code Insights report\n" + stack.logs())
    wait_for(lambda: any(x["text"].startswith("[prereview:summary]: #") for x in bb.general), 30, "summary")
    assert bb.violations == [] and bb.off_diff == []
    assert {q.auth for q in bb.requests} == {"token"}
    assert all(TOKEN not in p.read_text(errors="replace") for p in stack.tmp.glob("*.log"))


def test_help_is_answered_in_the_comments_thread(stack: Stack, bb: FakeBitbucket) -> None:
    cid, body = comment(bb, "/help", "maintainer")
    assert send(stack, body).status_code == 202  # type: ignore[attr-defined]
    [reply] = wait_for(lambda: replies_to(bb, cid), 60, "the help reply\n" + stack.logs())
    assert "prereview commands" in reply


def test_someone_without_write_access_is_refused(stack: Stack, bb: FakeBitbucket) -> None:
    before = len(bb.inline)
    cid, body = comment(bb, "/review", "passer-by")
    r = send(stack, body)
    assert r.status_code == 202 and r.json()["status"] == "not authorised"  # type: ignore[attr-defined]
    [reply] = wait_for(lambda: replies_to(bb, cid), 60, "the refusal\n" + stack.logs())
    assert reply.startswith("Sorry @passer-by, only people with write access")
    assert len(bb.inline) == before
    assert any(q.path == "/api/latest/users" and q.query.get("filter") == "passer-by" for q in bb.requests)


def test_a_repository_name_that_is_not_project_slug_is_refused(stack: Stack, bb: FakeBitbucket) -> None:
    data = json.loads((DATA / "pr_opened.json").read_text())
    data["pullRequest"]["toRef"]["repository"]["slug"] = ".."
    r = send(stack, json.dumps(data).encode(), "pr:opened")
    assert r.status_code == 200 and "no valid pull request" in r.json()["status"]  # type: ignore[attr-defined]


def test_git_gets_the_token_as_a_bearer_header_in_its_environment_only() -> None:
    from bot.change.checkout import auth_env
    from bot.config import Config
    from bot.jobs.job import Job
    from bot.server.bitbucket_session import BitbucketSession
    from bot.server.secrets import Secrets

    cfg = Config.model_validate({"server": {"bitbucket_url": "https://git.example.com/bitbucket/"}})
    session = BitbucketSession(
        Job("review", "bitbucket", "PRJ/widgets", 3), cfg, Secrets(bitbucket_token=TOKEN)
    )
    url = session._git_url()
    assert url == "https://git.example.com/bitbucket/scm/PRJ/widgets.git" and TOKEN not in url + repr(session)
    env = auth_env(url, None, TOKEN)
    assert env["GIT_CONFIG_KEY_0"] == "http.extraHeader"
    assert env["GIT_CONFIG_VALUE_0"] == f"Authorization: Bearer {TOKEN}"
    assert auth_env(url, "oauth2", "t")["GIT_CONFIG_VALUE_0"].startswith("Authorization: Basic ")
