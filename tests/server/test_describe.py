"""`/describe` on the webhook server: the worker's describe job through the real GitHub and GitLab
sessions, against the emulated forges."""

from __future__ import annotations

import json
from pathlib import Path

from bot.change.diff import parse
from bot.config import Config
from bot.jobs.job import Job
from bot.jobs.policy import decide
from bot.pipeline.run import LazyModel
from bot.progress import Quiet
from bot.render.markdown import SUMMARY_MARKER
from bot.render.walkthrough import START
from bot.server.forge_session import GitHubSession, GitLabSession
from bot.server.queue import make_storage
from bot.server.secrets import Secrets
from bot.server.state import ServerState
from bot.server.worker import ForgeRunner
from tests.fakes.github_api import FakeGitHub
from tests.fakes.gitlab_api import TOKEN, FakeGitLab
from tests.server.stack import DIFF


def _cfg(tmp: Path, **server: object) -> Config:
    paths = [f.path for f in parse(DIFF).files]
    text = json.dumps(
        {"summary": "Evaluates its input.", "files": {p: "now calls eval" for p in paths}, "risks": []}
    )
    script = tmp / "script.json"
    reply = {"match": "Describe the change", "text": text}  # one per describe job
    script.write_text(json.dumps({"replies": [reply, reply], "default": {}}))
    return Config.model_validate(
        {
            "model": {"backend": "scripted", "name": "scripted", "script": str(script)},
            "server": {"queue_path": str(tmp / "queue.db"), **server},
        }
    )


def _runner(cfg: Config, secrets: Secrets, session: type) -> ForgeRunner:
    class NoRepoConfig(session):  # type: ignore[misc, valid-type]
        def base_file(self, sha: str, path: str, dest: Path) -> str | None:
            return None  # the repository has no .prereview.yml

    state = ServerState(make_storage(cfg.server, "state"))
    return ForgeRunner(cfg, secrets, state, model=LazyModel(cfg, Quiet()), sessions=NoRepoConfig)


def test_a_describe_comment_becomes_a_describe_job() -> None:
    from bot.server.events import Event

    event = Event(
        forge="github",
        kind="comment",
        repo="o/r",
        number=1,
        body="/describe --update",
        association="OWNER",
        comment_id=5,
    )
    d = decide(event, Config().server, paused=False)
    assert d.job is not None and d.job.kind == "describe" and d.job.update


def test_github_describe_job_writes_the_summary_then_the_description(tmp_path: Path) -> None:
    with FakeGitHub(diff_text=DIFF, head_sha="a" * 40, base_sha="b" * 40, body="Author text.") as gh:
        cfg = _cfg(tmp_path, github_api_url=gh.url)
        runner = _runner(cfg, Secrets(github_token="ghs_test"), GitHubSession)
        runner.run(Job("describe", "github", "o/r", 1))
        (summary,) = [c for c in gh.issue_comments if SUMMARY_MARKER in c["body"]]
        assert START in summary["body"] and "| `app.py` | now calls eval |" in summary["body"]
        runner.run(Job("describe", "github", "o/r", 1, update=True))
        assert gh.body.startswith("Author text.") and "Evaluates its input." in gh.body
        assert gh.schema_errors == []


def test_gitlab_describe_job_writes_the_description(tmp_path: Path) -> None:
    with FakeGitLab(diff_text=DIFF, head_sha="a" * 40, base_sha="b" * 40, description="Why: speed.") as gl:
        cfg = _cfg(tmp_path, gitlab_url=gl.url)
        runner = _runner(cfg, Secrets(gitlab_token=TOKEN), GitLabSession)
        runner.run(Job("describe", "gitlab", str(gl.project_id), gl.mr_iid, update=True))
        assert gl.description.startswith("Why: speed.") and START in gl.description
        assert "| `app.py` | now calls eval |" in gl.description and gl.mr_edits == 1
        runner.run(Job("describe", "gitlab", str(gl.project_id), gl.mr_iid))
        (note,) = [n for n in gl.notes if SUMMARY_MARKER in n["body"]]
        assert "Evaluates its input." in note["body"]
        assert gl.violations == []


def test_github_describe_with_a_personal_access_token_updates_its_one_summary(tmp_path: Path) -> None:
    """A PAT's comments are authored by its user (no `[bot]`): `server.bot_logins` names it, and the
    describe job must recognise its own summary as the review's publisher does."""
    with FakeGitHub(diff_text=DIFF, head_sha="a" * 40, base_sha="b" * 40, bot_login="review-bot") as gh:
        cfg = _cfg(tmp_path, github_api_url=gh.url, bot_logins=["Review-Bot"])
        gh.add_issue_comment(f"{SUMMARY_MARKER}\nnot ours", login="mallory", association="NONE")
        runner = _runner(cfg, Secrets(github_token="ghp_personal"), GitHubSession)
        runner.run(Job("describe", "github", "o/r", 1))
        runner.run(Job("describe", "github", "o/r", 1))
        summaries = [c for c in gh.issue_comments if SUMMARY_MARKER in c["body"]]
        assert [c["user"]["login"] for c in summaries] == ["mallory", "review-bot"]
        assert summaries[0]["body"].endswith("not ours")  # a look-alike by someone else is left alone
        assert START in summaries[1]["body"] and gh.schema_errors == []
