"""A review is never published on a head that is gone (a force-push while it ran), and a finding GitHub
refused once (it listed in the summary) is posted inline when a later review can place it. Through the
worker's real GitHub session against the emulated API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.change.diff import parse
from bot.config import Config
from bot.forges.github.api import GitHubAPI
from bot.jobs.job import Job
from bot.jobs.review import HeadMoved
from bot.pipeline.run import LazyModel
from bot.progress import Quiet
from bot.publish.github import GitHubPublisher
from bot.render.markdown import SUMMARY_MARKER
from bot.server.forge_session import GitHubSession
from bot.server.queue import make_storage
from bot.server.secrets import Secrets
from bot.server.state import ServerState
from bot.server.worker import ForgeRunner
from bot.types import ChangeRequest, Coverage, Finding, Review, Stats
from tests.fakes.github_api import FakeGitHub
from tests.server.stack import DIFF

HEAD, NEW, BASE = "c" * 40, "e" * 40, "d" * 40


def _runner(tmp: Path, gh: FakeGitHub) -> ForgeRunner:
    finding = {
        "path": "app.py",
        "line": 3,
        "severity": "high",
        "category": "security",
        "message": "eval of input",
    }
    script = tmp / "script.json"
    script.write_text(json.dumps({"replies": [], "default": {"text": json.dumps({"findings": [finding]})}}))
    cfg = Config.model_validate(
        {
            "model": {"backend": "scripted", "name": "scripted", "script": str(script)},
            "scanners": {"secrets": False, "bandit": False, "patterns": False},
            "server": {
                "queue_path": str(tmp / "q.db"),
                "github_api_url": gh.url,
                "github_git_url": f"file://{tmp / 'nowhere'}",  # no checkout: the API diff is reviewed
            },
        }
    )

    class ForcePushedDuringReview(GitHubSession):
        def fetch(self) -> ChangeRequest:
            change = super().fetch()
            gh.set_head(NEW, DIFF)  # someone force-pushes while the review runs
            return change

        def base_file(self, sha: str, path: str, dest: Path) -> str | None:
            return None

    state = ServerState(make_storage(cfg.server, "state"))
    secrets = Secrets(github_token="ghs_test")
    return ForgeRunner(cfg, secrets, state, model=LazyModel(cfg, Quiet()), sessions=ForcePushedDuringReview)


@pytest.mark.parametrize("auto", [False, True])
def test_a_review_is_not_published_on_a_head_that_moved(tmp_path: Path, auto: bool) -> None:
    with FakeGitHub(repo="o/r", diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh:
        runner = _runner(tmp_path, gh)
        job = Job("review", "github", "o/r", 1, head_sha=HEAD, auto=auto, comment_id=None if auto else 9)
        if auto:
            assert runner.run(job) is None  # the push's own review follows
        else:
            with pytest.raises(HeadMoved, match="moved from `cccccccccccc` to `eeeeeeeeeeee`"):
                runner.run(job)  # the queue runs it again at once
        assert gh.reviews == [] and gh.comments == []
        assert not any(SUMMARY_MARKER in c["body"] for c in gh.issue_comments)
        assert ServerState(make_storage(runner.cfg.server, "state")).last_reviewed(job.pr_key) is None


def test_a_finding_refused_once_is_posted_inline_when_it_fits_later(tmp_path: Path) -> None:
    diff = "diff --git a/app.py b/app.py\nnew file mode 100644\n--- /dev/null\n+++ b/app.py\n" + (
        "@@ -0,0 +1,2 @@\n+a = 1\n+b = eval(x)\n"
    )
    finding = Finding(path="app.py", line=2, message="eval of input", quote="b = eval(x)")
    review = Review(BASE, HEAD, (finding,), Stats(model="scripted"), Coverage(reviewed=("app.py",)))
    with FakeGitHub(repo="o/r", diff_text=diff, head_sha=HEAD, base_sha=BASE) as gh:
        api = GitHubAPI(gh.url, "ghs_test", "o/r", sleep=lambda s: None, write_interval=0)
        gh.fail("POST", r"/pulls/1/reviews$", 422, message="Unprocessable Entity")  # after a force-push
        first = GitHubPublisher(api, 1).publish(review, parse(diff))
        assert first.rejected == 1 and gh.comments == []  # listed in the summary instead
        second = GitHubPublisher(api, 1).publish(review, parse(diff))
        assert second.posted == 1 and [c["line"] for c in gh.comments] == [2]
