"""Two reviews of one PR at once (a push review and a `/review` comment: the concurrency group is split by
event) leave one summary comment, never two (issue 27, item 5)."""

from __future__ import annotations

from bot.change.diff import parse
from bot.forges.github.api import GitHubAPI
from bot.publish.github import GitHubPublisher
from bot.render.markdown import SUMMARY_MARKER
from bot.types import Coverage, Finding, Review, Stats
from tests.fakes.github_api import FakeGitHub

HEAD, BASE = "a" * 40, "b" * 40
DIFF = (
    "diff --git a/app.py b/app.py\nnew file mode 100644\n--- /dev/null\n+++ b/app.py\n"
    "@@ -0,0 +1,2 @@\n+x1 = 1\n+x2 = 2\n"
)


def _review(line: int) -> Review:
    f = Finding(path="app.py", line=line, message=f"problem {line}", quote=f"x{line} = {line}")
    return Review(BASE, HEAD, (f,), Stats(model="scripted"), Coverage(reviewed=("app.py",)))


def _publisher(gh: FakeGitHub) -> GitHubPublisher:
    return GitHubPublisher(GitHubAPI(gh.url, "ghs_test", gh.repo, sleep=lambda s: None, write_interval=0), 1)


def _summaries(gh: FakeGitHub) -> list[dict]:
    return [c for c in gh.issue_comments if SUMMARY_MARKER in c["body"]]


def test_a_summary_made_after_the_start_of_a_run_is_edited_not_duplicated() -> None:
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh:
        push, comment = _publisher(gh), _publisher(gh)
        state = comment.summary()  # both runs start: no summary yet
        push.publish(_review(1), parse(DIFF))  # the push review finishes first and creates it
        comment.publish(_review(2), parse(DIFF), state=state)
        assert len(_summaries(gh)) == 1, [c["body"][:60] for c in gh.issue_comments]


def test_two_summaries_created_at_once_end_as_the_oldest() -> None:
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh:
        mine = _publisher(gh)
        other = _publisher(gh)
        create = mine.api.create_issue_comment

        def racing(number: int, body: str) -> dict:
            # the other run creates its summary in the same instant (after our re-read)
            other.api.create_issue_comment(number, f"{SUMMARY_MARKER}\n### prereview\n\nfrom the other run\n")
            return create(number, body)

        mine.api.create_issue_comment = racing  # type: ignore[method-assign]
        mine.publish(_review(1), parse(DIFF))
        [summary] = _summaries(gh)
        assert f"<!-- prereview:head={HEAD} -->" in summary["body"], "it holds this run's summary"
        assert summary["id"] == min(c["id"] for c in gh.issue_comments), "the oldest was adopted"
