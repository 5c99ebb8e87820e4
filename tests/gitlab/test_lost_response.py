"""A GitLab write whose response is lost (GitLab acted, the client never heard) is not posted twice: before
retrying, the client reads back the merge request's discussions and notes. Faults come from a loopback
proxy in front of the emulated API."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bot.config import GitLabConfig
from bot.forges.gitlab.forge import GitLabForge
from bot.publish.gitlab import publish
from bot.types import ChangeRef, ChangeRequest, Coverage, Finding, Review, Stats
from tests.fakes.gitlab_api import TOKEN, FakeGitLab
from tests.fakes.proxy import FaultProxy
from tests.gitlab.conftest import mr_diff, rev


def test_a_discussion_a_summary_and_a_reply_whose_responses_are_lost_are_posted_once(
    make_repo: Callable[..., Path],
) -> None:
    repo = make_repo({"app.py": "a = 1\n"}, {"app.py": "a = 1\nb = eval(x)\n"})
    base, head = rev(repo, "HEAD~1"), rev(repo)
    change = ChangeRequest(
        ChangeRef("gitlab", "42", base, head, 7), base, head, mr_diff(repo, base, head), workdir=repo
    )
    finding = Finding("app.py", 2, "eval of input", quote="b = eval(x)")
    review = Review(base, head, (finding,), Stats(model="scripted"), Coverage(reviewed=("app.py",)))
    with (
        FakeGitLab(diff_text=change.diff_text, base_sha=base, head_sha=head, start_sha="c" * 40) as gl,
        FaultProxy(gl.url) as proxy,
    ):
        proxy.lose("POST", r"/discussions$")
        proxy.lose("POST", r"/notes$")
        forge = GitLabForge(proxy.url, TOKEN, gl.project_id, sleep=lambda s: None)
        publish(forge, change, review, GitLabConfig())
        assert len(proxy.lost) == 2
        assert gl.count("POST", r"/discussions$") == 1 and gl.count("POST", r"/notes$") == 1
        assert len(gl.diff_notes) == 1
        proxy.lose("POST", r"/discussions/[^/]+/notes$")
        thread = next(d for d in forge.discussions(7) if d["notes"][0].get("position"))
        forge.reply_to_discussion(7, str(thread["id"]), "an answer")
        answers = [n for d in forge.discussions(7) for n in d["notes"] if n["body"] == "an answer"]
        assert len(proxy.lost) == 3 and len(answers) == 1
