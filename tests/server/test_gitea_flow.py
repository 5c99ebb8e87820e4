"""The running server and worker against the emulated Gitea: signed webhooks in, reviews and replies out."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.server import events
from bot.server.forge_session import replied_to
from bot.server.masking import Masking
from bot.server.secrets import Secrets
from bot.server.verify import gitea_ok, gitea_signature
from tests.fakes.gitea_api import TOKEN, FakeGitea
from tests.server.stack import DIFF, GITEA_SECRET, Stack, wait_for

DATA = Path(__file__).resolve().parents[1] / "data" / "gitea"


@pytest.fixture(scope="module")
def gt() -> Iterator[FakeGitea]:
    with FakeGitea(
        diff_text=DIFF,
        base_sha="b" * 40,
        head_sha="a" * 40,
        permissions={"maintainer": "write", "reader": "read"},
    ) as fake:
        yield fake


@pytest.fixture(scope="module")
def stack(gt: FakeGitea, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    s = Stack(tmp_path_factory.mktemp("gitea"), "http://127.0.0.1:9", server={"gitea_url": gt.url})
    s.env["PREREVIEW_GITEA_TOKEN"] = TOKEN
    s.start_server()
    s.start_worker()
    yield s
    s.stop()


def comment(gt: FakeGitea, body: str, user: str) -> tuple[int, bytes]:
    data = json.loads((DATA / "issue_comment.created.on_pr.json").read_text())
    cid = gt.add_comment(body, author=user)["id"]  # the comment exists on Gitea before its hook arrives
    data["comment"].update(body=body, id=cid, user=gt.user(user))
    data["sender"] = gt.user(user)
    data["issue"]["number"] = data["pull_request"]["number"] = gt.number
    return cid, json.dumps(data).encode()


def answered(gt: FakeGitea) -> list[int]:
    return [i for c in gt.comments for i in sorted(replied_to([c["body"]]))]


def test_signature_is_the_hex_hmac_of_the_body() -> None:
    body = b'{"action":"opened"}'
    sig = gitea_signature("s3cret", body)
    assert len(sig) == 64 and not sig.startswith("sha256=")
    assert gitea_ok("s3cret", body, sig) and gitea_ok("s3cret", body, sig.upper())
    assert not gitea_ok("s3cret", body + b" ", sig) and not gitea_ok("other", body, sig)
    assert not gitea_ok(None, body, sig) and not gitea_ok("s3cret", body, None)
    assert not gitea_ok("s3cret", body, "sha256=" + sig)  # GitHub's form is not Gitea's header


def test_payload_fixtures_parse_into_events() -> None:
    pr = events.gitea("pull_request", json.loads((DATA / "pull_request.opened.json").read_text()))
    assert pr is not None and (pr.forge, pr.kind, pr.repo, pr.number) == ("gitea", "pr", "acme/widgets", 3)
    assert pr.head_sha == "a" * 40
    c = events.gitea("issue_comment", json.loads((DATA / "issue_comment.created.on_pr.json").read_text()))
    assert c is not None and (c.kind, c.author, c.body, c.comment_id) == (
        "comment",
        "maintainer",
        "/review",
        1001,
    )
    assert (
        events.gitea(
            "pull_request", {"action": "synchronize", "number": 3, "repository": {"full_name": "a/b"}}
        )
        is None
    )
    assert events.valid_repo("gitea", "acme/widgets") and not events.valid_repo("gitea", "acme/..")


def test_the_gitea_token_is_masked_in_everything_sent_out() -> None:
    masking = Masking(Secrets(gitea_token=TOKEN).values())
    masking.reset()  # a new job keeps the server's own secrets
    assert TOKEN not in masking.text(f"the token is {TOKEN}.")


def test_bad_or_missing_signature_is_401(stack: Stack, gt: FakeGitea) -> None:
    _, body = comment(gt, "/help", "maintainer")
    assert stack.gitea(body, signature="0" * 64).status_code == 401
    assert stack.gitea(body, signature=None).status_code == 401
    assert stack.gitea(body, signature=gitea_signature(GITEA_SECRET, body + b"x")).status_code == 401


def test_maintainer_review_posts_a_review_and_replay_is_one_job(stack: Stack, gt: FakeGitea) -> None:
    cid, body = comment(gt, "/review", "maintainer")
    r = stack.gitea(body, delivery="d-1")
    assert r.status_code == 202, r.text
    assert stack.gitea(body, delivery="d-1").json()["status"] == "duplicate delivery"
    assert stack.gitea(body, delivery="d-2").json()["status"] == "duplicate event"  # re-signed replay
    wait_for(lambda: gt.inline, 90, "an inline review comment\n" + stack.logs())
    [review] = gt.reviews
    assert review["state"] == "COMMENT" and review["user"]["login"] == "prereview-bot"
    [c] = gt.inline
    assert c["path"] == "app.py" and c["position"] == 2  # `y = eval(x)`: new-file line 2
    wait_for(
        lambda: any(c["body"].startswith("<!-- prereview:summary -->") for c in gt.comments), 30, "summary"
    )
    wait_for(lambda: gt.reactions, 30, "the 👀 reaction")
    assert gt.reactions[0]["content"] == "eyes" and gt.reactions[0]["comment_id"] == cid
    assert gt.violations == [] and gt.off_diff == []


def test_forgejo_headers_are_accepted(stack: Stack, gt: FakeGitea) -> None:
    cid, body = comment(gt, "/help", "maintainer")
    assert stack.gitea(body, forgejo=True).status_code == 202
    wait_for(lambda: cid in answered(gt), 60, "the help reply\n" + stack.logs())


@pytest.mark.parametrize("user", ["reader", "stranger"])
def test_untrusted_commenter_is_refused(stack: Stack, gt: FakeGitea, user: str) -> None:
    before = len(gt.reviews)
    cid, body = comment(gt, "/review", user)
    r = stack.gitea(body)
    assert r.status_code == 202 and r.json()["status"] == "not authorised"
    wait_for(lambda: cid in answered(gt), 60, "the refusal\n" + stack.logs())
    reply = next(c["body"] for c in gt.comments if cid in replied_to([c["body"]]))
    assert reply.startswith(f"Sorry @{user}, only people with write access")
    assert len(gt.reviews) == before


def test_pull_request_events_queue_a_review(stack: Stack, gt: FakeGitea) -> None:
    data = json.loads((DATA / "pull_request.opened.json").read_text())
    data["action"] = "synchronized"
    data["number"] = gt.number
    r = stack.gitea(json.dumps(data).encode(), event="pull_request")
    assert r.status_code == 202 and r.json()["status"] == "review queued"
    data["action"] = "edited"  # a title edit: not new commits
    r = stack.gitea(json.dumps(data).encode(), event="pull_request")
    assert r.status_code == 200 and r.json()["status"] == "ignored event"
