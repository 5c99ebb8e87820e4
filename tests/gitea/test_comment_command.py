"""A Gitea/Forgejo Actions `issue_comment` run answers the comment's command through the one job
dispatcher, as the webhook server does: the help for `/help` (a reply to that comment), the refusal for
someone without write access, describe into the summary."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.gitea_api import FakeGitea

from .conftest import DATA, PR


def _comment_event(pr: PR, gt: FakeGitea, body: str, user: str) -> tuple[int, Path]:
    data = json.loads((DATA / "issue_comment.created.on_pr.json").read_text())
    cid = gt.add_comment(body, author=user)["id"]  # the comment exists on Gitea before the run starts
    data["comment"].update(body=body, id=cid, user=gt.user(user))
    data["sender"] = gt.user(user)
    data["repository"]["full_name"] = gt.repo
    data["issue"]["number"] = data["pull_request"]["number"] = gt.number
    path = pr.tmp / f"comment-{cid}.json"
    path.write_text(json.dumps(data))
    return cid, path


def _run(pr: PR, gt: FakeGitea, body: str, user: str) -> tuple[int, str]:
    cid, path = _comment_event(pr, gt, body, user)
    result = pr.run(gt, GITHUB_EVENT_NAME="issue_comment", GITHUB_EVENT_PATH=str(path))
    assert result.code == 0, result.err
    return cid, result.err


def test_help_is_answered_in_a_reply_to_the_comment(pr: PR) -> None:
    with pr.fake() as gt:
        cid, _ = _run(pr, gt, "/help", "dev")
        reply = gt.comments[-1]["body"]
        assert "prereview commands" in reply and f"reply-to={cid}" in reply
        assert gt.reviews == [] and gt.violations == []
        assert any(r.get("content") == "eyes" for r in gt.reactions)


def test_someone_without_write_access_gets_the_refusal(pr: PR) -> None:
    with pr.fake(permissions={"passer-by": "read"}) as gt:
        _run(pr, gt, "/review", "passer-by")
        assert "only people with write access" in gt.comments[-1]["body"] and gt.reviews == []


def test_a_comment_without_a_command_is_nothing_to_do(pr: PR) -> None:
    with pr.fake() as gt:
        before = len(gt.comments) + 1
        _, err = _run(pr, gt, "looks good to me", "dev")
        assert "nothing to do" in err and len(gt.comments) == before and gt.reviews == []


def test_pause_says_a_ci_job_cannot_remember_it(pr: PR) -> None:
    with pr.fake() as gt:
        _run(pr, gt, "/pause", "dev")
        assert "keeps nothing between runs" in gt.comments[-1]["body"]
