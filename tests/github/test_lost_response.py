"""A write whose response is lost (the forge acted, the client never heard) is not posted twice: before
retrying, the client reads back what the PR holds. Faults come from a loopback proxy in front of the
emulated API."""

from __future__ import annotations

from bot.change.diff import parse
from bot.forges.github.api import GitHubAPI
from bot.publish.github import GitHubPublisher
from bot.render.markdown import SUMMARY_MARKER
from bot.types import Coverage, Finding, Review, Stats
from tests.fakes.github_api import FakeGitHub
from tests.fakes.proxy import FaultProxy

HEAD, BASE = "a" * 40, "b" * 40
DIFF = (
    "diff --git a/app.py b/app.py\nnew file mode 100644\n--- /dev/null\n+++ b/app.py\n@@ -0,0 +1,3 @@\n"
    + ("+x1 = 1\n+x2 = 2\n+x3 = 3\n")
)


def _review() -> Review:
    findings = tuple(
        Finding(path="app.py", line=n, message=f"problem {n}", quote=f"x{n} = {n}") for n in (1, 3)
    )
    return Review(BASE, HEAD, findings, Stats(model="scripted"), Coverage(reviewed=("app.py",)))


def test_a_review_and_a_summary_whose_responses_are_lost_are_posted_once() -> None:
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh, FaultProxy(gh.url) as proxy:
        proxy.lose("POST", r"/pulls/1/reviews$")
        proxy.lose("POST", r"/issues/1/comments$")
        api = GitHubAPI(proxy.url, "ghs_test", gh.repo, sleep=lambda s: None, write_interval=0)
        GitHubPublisher(api, 1).publish(_review(), parse(DIFF))
        assert proxy.lost == ["POST /repos/o/r/pulls/1/reviews", "POST /repos/o/r/issues/1/comments"]
        assert len(gh.reviews) == 1
        assert sorted(c["line"] for c in gh.comments) == [1, 3]  # every inline comment once
        assert sum(SUMMARY_MARKER in c["body"] for c in gh.issue_comments) == 1
        assert gh.schema_errors == []


def test_a_reply_and_a_thread_answer_whose_responses_are_lost_are_posted_once() -> None:
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh, FaultProxy(gh.url) as proxy:
        api = GitHubAPI(proxy.url, "ghs_test", gh.repo, sleep=lambda s: None, write_interval=0)
        GitHubPublisher(api, 1).publish(_review(), parse(DIFF))
        root = gh.comments[0]["id"]
        proxy.lose("POST", r"/issues/1/comments$")
        proxy.lose("POST", r"/replies$")
        api.create_issue_comment(1, "an answer")
        api.reply_to_review_comment(1, root, "an answer in the thread")
        assert len(proxy.lost) == 2
        assert sum(c["body"] == "an answer" for c in gh.issue_comments) == 1
        assert sum(c["body"] == "an answer in the thread" for c in gh.comments) == 1


def test_a_write_that_did_not_land_is_still_retried() -> None:
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh, FaultProxy(gh.url) as proxy:
        proxy.answer("POST", r"/issues/1/comments$", 502)  # refused before the forge saw it
        api = GitHubAPI(proxy.url, "ghs_test", gh.repo, sleep=lambda s: None, write_interval=0)
        api.create_issue_comment(1, "hello")
        assert [c["body"] for c in gh.issue_comments] == ["hello"]
