"""Replies inside prereview's review threads are questions about that line: answered in the thread
(GitHub `pull_request_review_comment` replies, GitLab diff-discussion notes), only in our threads and only
for trusted people."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from bot.change.diff import parse
from bot.config import Config, GitLabConfig
from bot.forges.github.api import GitHubAPI
from bot.jobs.policy import decide
from bot.pipeline.run import LazyModel
from bot.progress import Quiet
from bot.publish.github import GitHubPublisher
from bot.publish.gitlab import publish as gitlab_publish
from bot.server import events
from bot.server.forge_session import GitHubSession, GitLabSession
from bot.server.queue import make_storage
from bot.server.secrets import Secrets
from bot.server.state import ServerState
from bot.server.worker import ForgeRunner
from bot.types import ChangeRef, ChangeRequest, Coverage, Finding, Review, Stats
from tests.fakes.github_api import FakeGitHub
from tests.fakes.gitlab_api import TOKEN, FakeGitLab
from tests.server.stack import DIFF, PAYLOADS

HEAD, BASE = "a" * 40, "b" * 40
FINDING = Finding("app.py", 2, "eval on input", quote="y = eval(x)", category="security", cwe="CWE-95")


def _review() -> Review:
    return Review(BASE, HEAD, (FINDING,), Stats(model="scripted"), Coverage(reviewed=("app.py",)))


def _runner(tmp: Path, session: type, secrets: Secrets, **server: str) -> tuple[ForgeRunner, Path]:
    script = tmp / "script.json"
    script.write_text(json.dumps({"replies": [], "default": {"text": "It runs eval on the argument x."}}))
    cfg = Config.model_validate(
        {
            "model": {"backend": "scripted", "name": "scripted", "script": str(script)},
            "server": {"queue_path": str(tmp / "queue.db"), **server},
        }
    )

    class NoRepoConfig(session):  # type: ignore[misc, valid-type]
        def base_file(self, sha: str, path: str, dest: Path) -> str | None:
            return None

    runner = ForgeRunner(
        cfg,
        secrets,
        ServerState(make_storage(cfg.server, "s")),
        model=LazyModel(cfg, Quiet()),
        sessions=NoRepoConfig,
    )
    return runner, script


def _reply_payload(root: int, association: str = "OWNER", body: str = "Why is this a problem?") -> dict:
    p = copy.deepcopy(
        json.loads((PAYLOADS / "github" / "pull_request_review_comment.created.octokit.json").read_text())
    )
    p["repository"]["full_name"] = "o/r"
    p["pull_request"]["number"] = 1
    p["comment"].update(
        {"in_reply_to_id": root, "path": "app.py", "line": 2, "author_association": association, "body": body}
    )
    return p


def test_a_github_thread_reply_becomes_an_ask_about_its_line() -> None:
    ev = events.github("pull_request_review_comment", _reply_payload(77))
    assert ev is not None and (ev.thread, ev.path, ev.line) == ("77", "app.py", 2)
    d = decide(ev, Config().server, paused=False)
    assert d.job is not None and d.job.kind == "ask" and d.job.thread == "77" and d.job.text.startswith("Why")
    stranger = events.github("pull_request_review_comment", _reply_payload(77, association="NONE"))
    assert stranger is not None and decide(stranger, Config().server, paused=False).job is None
    command = events.github("pull_request_review_comment", _reply_payload(77, body="/review"))
    assert decide(command, Config().server, paused=False).job.kind == "review"  # type: ignore[union-attr]
    top_level = copy.deepcopy(_reply_payload(77))
    top_level["comment"]["in_reply_to_id"] = None
    assert (
        decide(events.github("pull_request_review_comment", top_level), Config().server, paused=False).job
        is None
    )  # type: ignore[arg-type]


def test_github_worker_answers_inside_our_thread_only(tmp_path: Path) -> None:
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh:
        api = GitHubAPI(gh.url, "ghs_test", gh.repo, sleep=lambda s: None, write_interval=0)
        GitHubPublisher(api, 1).publish(_review(), parse(DIFF))
        root = gh.comments[0]["id"]
        human = gh._store_comment({"path": "app.py", "line": 2, "body": "Why?"}, None, HEAD, in_reply_to=root)
        runner, _ = _runner(tmp_path, GitHubSession, Secrets(github_token="ghs_test"), github_api_url=gh.url)
        ev = events.github("pull_request_review_comment", _reply_payload(root))
        job = decide(ev, Config().server, paused=False).job  # type: ignore[arg-type]
        assert job is not None
        job = job.__class__(**{**job.__dict__, "comment_id": human["id"]})
        runner.run(job)
        answers = [c for c in gh.comments if c.get("in_reply_to_id") == root and c["id"] != human["id"]]
        assert len(answers) == 1 and "It runs eval on the argument x." in answers[0]["body"]
        asked = runner.model().requests[-1][-1].content  # type: ignore[attr-defined]
        assert "review thread on app.py:2" in asked and "Why is this a problem?" in asked
        runner.run(job)  # a retried job answers once
        assert len([c for c in gh.comments if c.get("in_reply_to_id") == root]) == 2
        # a thread that a person opened is not ours to join
        other = gh._store_comment({"path": "app.py", "line": 3, "body": "nit"}, None, HEAD)
        runner.run(job.__class__(**{**job.__dict__, "thread": str(other["id"]), "comment_id": 999}))
        assert not any(c.get("in_reply_to_id") == other["id"] for c in gh.comments)
        assert gh.schema_errors == []


def test_gitlab_diff_discussion_note_is_answered_in_the_discussion(tmp_path: Path, make_repo) -> None:  # type: ignore[no-untyped-def]
    with FakeGitLab(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gl:
        from bot.forges.gitlab.forge import GitLabForge

        forge = GitLabForge(gl.url, TOKEN, gl.project_id, sleep=lambda s: None)
        change = ChangeRequest(
            ChangeRef("gitlab", str(gl.project_id), BASE, HEAD, gl.mr_iid), BASE, HEAD, DIFF
        )
        gitlab_publish(forge, change, _review(), GitLabConfig())
        (thread,) = [d for d in gl.discussions if not d["individual_note"]]
        note = json.loads((PAYLOADS / "gitlab" / "note_merge_request.go-gitlab.json").read_text())
        note["project"]["path_with_namespace"] = gl.project_path
        note["merge_request"]["iid"] = gl.mr_iid
        note["user"]["username"] = gl.author
        note["object_attributes"].update(
            {
                "discussion_id": thread["id"],
                "type": "DiffNote",
                "position": {"new_path": "app.py", "new_line": 2},
                "note": "Is this reachable from user input?",
            }
        )
        ev = events.gitlab(note)
        assert ev is not None and ev.thread == thread["id"] and (ev.path, ev.line) == ("app.py", 2)
        job = decide(ev, Config().server, paused=False).job
        assert job is not None and job.kind == "ask" and job.check_access
        runner, _ = _runner(tmp_path, GitLabSession, Secrets(gitlab_token=TOKEN), gitlab_url=gl.url)
        job = job.__class__(
            **{**job.__dict__, "repo": str(gl.project_id), "author_id": gl.user_id(gl.author)}
        )
        runner.run(job)
        (thread,) = [d for d in gl.discussions if d["id"] == thread["id"]]
        assert "It runs eval on the argument x." in thread["notes"][-1]["body"]
        assert gl.violations == []
