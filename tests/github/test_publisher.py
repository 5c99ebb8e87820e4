"""The GitHub publisher and API client against the emulated API, without the pipeline."""

from __future__ import annotations

import pytest

from bot.change.diff import parse
from bot.forges.github import actions
from bot.forges.github.api import GitHubAPI
from bot.forges.github.checks import create_check_run
from bot.forges.github.diff import patch_to_diff
from bot.forges.github.errors import retry_wait
from bot.forges.github.placement import inline_comment
from bot.publish.github import GitHubPublisher
from bot.render.markdown import SUMMARY_MARKER, fingerprint_marker
from bot.types import Coverage, Finding, Review, Stats
from tests.fakes.github_api import FakeGitHub

HEAD, BASE = "a" * 40, "b" * 40
TWO_HUNKS = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n" + (
    "@@ -1,1 +1,2 @@\n a\n+b\n@@ -20,1 +21,2 @@\n c\n+d\n"
)


def _diff(n_lines: int, path: str = "app.py") -> str:
    body = "".join(f"+x{i} = {i}\n" for i in range(1, n_lines + 1))
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{n_lines} @@\n" + body
    )


def _review(findings: list[Finding]) -> Review:
    return Review(BASE, HEAD, tuple(findings), Stats(model="scripted"), Coverage(reviewed=("app.py",)))


def _finding(line: int, **kw: object) -> Finding:
    return Finding(
        path=kw.pop("path", "app.py"), line=line, message=f"problem {line}", quote=f"x{line} = {line}", **kw
    )  # type: ignore[arg-type]


class _Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def _api(gh: FakeGitHub, sleeps: _Sleeps | None = None) -> GitHubAPI:
    return GitHubAPI(
        gh.url, "ghs_test", gh.repo, sleep=sleeps if sleeps is not None else _Sleeps(), write_interval=0
    )


def test_at_most_30_comments_per_review_rest_in_summary() -> None:
    text = _diff(40)
    with FakeGitHub(diff_text=text, head_sha=HEAD, base_sha=BASE) as gh:
        res = GitHubPublisher(_api(gh), 1).publish(_review([_finding(i) for i in range(1, 36)]), parse(text))
        assert (res.posted, res.in_summary, res.reviews) == (30, 5, 1)
        assert len(gh.reviews) == 1 and len(gh.comments) == 30
        summary = gh.issue_comments[0]["body"]
        assert SUMMARY_MARKER in summary and "`app.py:35`" in summary
        assert gh.schema_errors == []


def test_ranges_and_committable_suggestions_only_when_verified() -> None:
    text = _diff(10)
    code = "x3 = `3`\nx4 = ```4```"
    verified = _finding(3, end_line=4, suggestion=code, verified=True, evidence="tests: 3 passed")
    unverified = _finding(7, end_line=8, suggestion="x7 = 0\nx8 = 0")
    with FakeGitHub(diff_text=text, head_sha=HEAD, base_sha=BASE) as gh:
        GitHubPublisher(_api(gh), 1).publish(_review([verified, unverified]), parse(text))
        by_line = {c["line"]: c for c in gh.comments}
        assert by_line[4]["start_line"] == 3 and by_line[4]["start_side"] == "RIGHT"
        assert "````suggestion\nx3 = `3`\nx4 = ```4```\n````" in by_line[4]["body"]
        assert "suggestion" not in by_line[8]["body"]
        assert gh.schema_errors == []


def test_range_across_hunks_degrades_to_one_line_without_a_suggestion() -> None:
    text = TWO_HUNKS
    f = Finding(path="m.py", line=2, end_line=22, message="m", suggestion="z\n", verified=True)
    c = inline_comment(f, parse(text))
    assert c is not None and "start_line" not in c and c["line"] == 2 and "```suggestion" not in c["body"]
    assert inline_comment(Finding(path="m.py", line=10, message="m"), parse(text)) is None


def test_422_without_a_known_cause_is_bisected_and_nothing_is_lost() -> None:
    text = _diff(4)
    with FakeGitHub(diff_text=text, head_sha=HEAD, base_sha=BASE) as gh:
        gh.fail("POST", r"/reviews$", 422, message="Unprocessable Entity")
        res = GitHubPublisher(_api(gh), 1).publish(_review([_finding(i) for i in range(1, 5)]), parse(text))
        assert res.posted == 4 and res.rejected == 0 and res.reviews == 2
        assert len(gh.comments) == 4


def test_existing_comments_are_paginated_and_not_posted_again() -> None:
    text = _diff(150)
    findings = [_finding(i) for i in range(1, 151)]
    with FakeGitHub(diff_text=text, head_sha=HEAD, base_sha=BASE) as gh:
        for f in findings:
            gh.comments.append(
                {
                    "id": f.line,
                    "path": "app.py",
                    "line": f.line,
                    "body": fingerprint_marker(f.fingerprint),
                    "user": {"login": "github-actions[bot]"},
                }
            )
        pub = GitHubPublisher(_api(gh), 1)
        assert len(pub.posted()) == 150
        assert gh.calls("GET", "/pulls/1/comments") == 2  # per_page=100, followed the Link header
        res = pub.publish(_review(findings), parse(text))
        assert res.posted == 0 and res.skipped == 150 and gh.reviews == []


def test_retry_wait_follows_github_headers() -> None:
    class E:
        def __init__(self, status: int, headers: dict[str, str] | None = None, data: object = None) -> None:
            self.status, self.headers, self.data = status, headers or {}, data

    assert retry_wait(E(429, {"Retry-After": "7"}), 0) == 7
    assert retry_wait(E(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1060"}), 0, now=1000) == 60
    assert retry_wait(E(403, data={"message": "You have exceeded a secondary rate limit"}), 2) == 4
    assert retry_wait(E(502), 1) == 2
    assert retry_wait(E(403, data={"message": "Resource not accessible by integration"}), 0) is None
    assert retry_wait(E(404), 0) is None and retry_wait(E(422), 0) is None


def test_retries_sleep_through_the_injected_sleep_and_writes_are_paced() -> None:
    sleeps = _Sleeps()
    with FakeGitHub(diff_text=_diff(2), head_sha=HEAD, base_sha=BASE) as gh:
        gh.fail("POST", r"/issues/1/comments$", 429, headers={"Retry-After": "3"}, times=2)
        ticks = iter(range(100))
        api = GitHubAPI(
            gh.url, "t", gh.repo, sleep=sleeps, write_interval=1.0, clock=lambda: next(ticks) * 0.25
        )
        api.create_issue_comment(1, "one")
        api.create_issue_comment(1, "two")
        assert sleeps[:2] == [3.0, 3.0] and len(sleeps) == 3 and 0 < sleeps[2] <= 1.0
        assert [c["body"] for c in gh.issue_comments] == ["one", "two"]


def test_check_run_annotations_are_batched_by_50() -> None:
    text = _diff(120)
    with FakeGitHub(diff_text=text, head_sha=HEAD, base_sha=BASE) as gh:
        create_check_run(_api(gh), _review([_finding(i) for i in range(1, 121)]), conclusion="neutral")
        assert gh.calls("POST", "/check-runs") == 1 and gh.calls("PATCH", "/check-runs/1000") == 2
        assert len(gh.check_runs[0]["annotations"]) == 120
        assert gh.schema_errors == []


def test_workflow_command_escaping() -> None:
    f = Finding(path="dir,x/a:b.py", line=3, end_line=4, message="100% wrong\r\nsecond line", severity="high")
    line = actions.annotation(f)
    assert line.startswith("::error file=dir%2Cx/a%3Ab.py,line=3,endLine=4,title=prereview high bug::")
    assert line.endswith("::100%25 wrong%0D%0Asecond line")


def test_patch_to_diff_round_trips_the_files_api() -> None:
    text = (
        _diff(3)
        + "diff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\nrename to new.py\n"
        "--- a/old.py\n+++ b/new.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    )
    with FakeGitHub(diff_text=text, head_sha=HEAD, base_sha=BASE) as gh:
        rebuilt, missing = patch_to_diff(_api(gh).files(1))
    ours, theirs = parse(text), parse(rebuilt)
    assert missing == []
    assert [(f.path, f.old_path, [h.lines for h in f.hunks]) for f in ours.files] == [
        (f.path, f.old_path, [h.lines for h in f.hunks]) for f in theirs.files
    ]


@pytest.mark.parametrize("status", [401, 403])  # a 404: tests/server/test_forge_limits.py
def test_write_refused_is_permission_denied(status: int) -> None:
    from bot.forges.base import PermissionDenied

    with FakeGitHub(diff_text=_diff(1), head_sha=HEAD, base_sha=BASE) as gh:
        gh.fail("POST", r"/issues/1/comments$", status, message="Resource not accessible by integration")
        with pytest.raises(PermissionDenied, match="pull-requests: write"):
            _api(gh).create_issue_comment(1, "x")


def test_read_errors_are_one_line_user_errors() -> None:
    from bot.types import PrereviewError

    with FakeGitHub(diff_text=_diff(1), head_sha=HEAD, base_sha=BASE) as gh:
        with pytest.raises(PrereviewError, match="answered 404 .*check GITHUB_TOKEN"):
            _api(gh).pull(7)
        url = gh.url
    with pytest.raises(PrereviewError, match="cannot reach the GitHub API"):
        GitHubAPI(url, "t", "o/r", sleep=_Sleeps(), tries=2).pull(1)


def test_no_suggestion_on_removed_lines() -> None:
    text = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,1 @@\n a\n-b\n"
    f = Finding(path="m.py", line=2, side="LEFT", message="m", suggestion="z\n", verified=True)
    c = inline_comment(f, parse(text))
    assert c is not None and c["side"] == "LEFT" and "```suggestion" not in c["body"]


def test_findings_on_the_same_line_are_one_comment_and_not_posted_again() -> None:
    from bot.render.markdown import fingerprints_in

    text = _diff(5)
    a = _finding(3, category="security", severity="high")
    b = Finding(path="app.py", line=3, message="another problem", quote="x3 = 3", category="bug")
    c = _finding(4)
    with FakeGitHub(diff_text=text, head_sha=HEAD, base_sha=BASE) as gh:
        res = GitHubPublisher(_api(gh), 1).publish(_review([a, b, c]), parse(text))
        assert len(gh.comments) == 2 and res.posted == 3 and res.in_summary == 0
        [both] = [x for x in gh.comments if x["line"] == 3]
        assert "problem 3" in both["body"] and "another problem" in both["body"]
        assert fingerprints_in(both["body"]) == {a.fingerprint, b.fingerprint}
        again = GitHubPublisher(_api(gh), 1).publish(_review([a, b, c]), parse(text))
        assert again.posted == 0 and again.skipped == 3 and len(gh.comments) == 2
        assert gh.schema_errors == []
