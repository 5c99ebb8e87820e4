"""Publishing a Review through GitLabForge (python-gitlab) to the emulated API: positions, suggestions,
fallbacks, dedupe, stale threads, the summary note, retries."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bot.change.diff import parse
from bot.config import GitLabConfig
from bot.forges.gitlab.forge import GitLabForge
from bot.publish.gitlab import publish
from bot.types import ChangeRef, ChangeRequest, Coverage, Finding, PrereviewError, Review, Skipped, Stats
from tests.fakes.gitlab_api import LINE_CODE_ERROR, TOKEN, FakeGitLab
from tests.gitlab.conftest import assert_positions_on_diff, mr_diff, rev

BASE = "".join(f"line {i}\n" for i in range(1, 31))
HEAD = (
    BASE.replace("line 3\n", "line 3 changed\n")
    .replace("line 10\n", "")
    .replace("line 20\n", "line 20\nadded a\nadded b\nadded c\n")
)


@pytest.fixture
def change(make_repo: Callable[..., Path]) -> ChangeRequest:
    repo = make_repo(
        {"app.py": BASE, "old.py": "gone\n"}, {"app.py": HEAD, "old.py": None, "new.py": "x = 1\n"}
    )
    base, head = rev(repo, "HEAD~1"), rev(repo)
    return ChangeRequest(
        ChangeRef("gitlab", "42", base, head, 7), base, head, mr_diff(repo, base, head), workdir=repo
    )


@pytest.fixture
def gl(change: ChangeRequest) -> Iterator[FakeGitLab]:
    with FakeGitLab(
        diff_text=change.diff_text, base_sha=change.base_sha, head_sha=change.head_sha, start_sha="c" * 40
    ) as fake:
        yield fake


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def forge(fake: FakeGitLab, sleep: Callable[[float], None] | None = None) -> GitLabForge:
    return GitLabForge(fake.url, TOKEN, fake.project_id, sleep=sleep if sleep is not None else Sleeps())


def review(change: ChangeRequest, *findings: Finding, skipped: tuple[Skipped, ...] = ()) -> Review:
    return Review(
        change.base_sha,
        change.head_sha,
        findings,
        Stats(model="scripted"),
        Coverage(reviewed=("app.py",), skipped=skipped),
    )


def _line(change: ChangeRequest, text: str) -> int:
    f = parse(change.diff_text).file("app.py")
    assert f is not None
    return next(n for n, ln in f.by_new.items() if ln.text == text)


def test_added_context_and_removed_lines_get_the_position_gitlab_expects(
    gl: FakeGitLab, change: ChangeRequest
) -> None:
    findings = (
        Finding("app.py", _line(change, "line 3 changed"), "added", quote="line 3 changed"),
        Finding("app.py", _line(change, "line 4"), "context", quote="line 4"),
        Finding("app.py", 10, "removed line", side="LEFT", quote="line 10"),
        Finding("old.py", 1, "deleted file", side="LEFT", quote="gone"),
        Finding("new.py", 1, "new file", quote="x = 1"),
    )
    res = publish(forge(gl), change, review(change, *findings), GitLabConfig())
    assert (res.comments, res.file_comments, res.in_summary) == (5, 0, 0)
    assert gl.violations == [] and gl.rejected == []
    assert_positions_on_diff(gl)
    pos = [n["position"] for n in gl.diff_notes]
    assert "old_line" not in pos[0] and pos[0]["new_line"] == 3
    assert pos[1]["old_line"] == 4 and pos[1]["new_line"] == 4
    assert pos[2]["old_line"] == 10 and "new_line" not in pos[2]
    assert pos[3]["old_path"] == pos[3]["new_path"] == "old.py" and pos[3]["old_line"] == 1
    assert pos[4]["new_path"] == "new.py" and pos[4]["new_line"] == 1
    assert all(p["start_sha"] == "c" * 40 and p["head_sha"] == change.head_sha for p in pos)


def test_multi_line_finding_gets_a_line_range_and_a_relative_suggestion(
    gl: FakeGitLab, change: ChangeRequest
) -> None:
    start = _line(change, "added a")
    f = Finding(
        "app.py",
        start,
        "three bad lines",
        end_line=start + 2,
        quote="added a",
        suggestion="fixed a\nfixed b\nfixed c\n",
        verified=True,
        evidence="tests: 3 passed, was 1 failed",
    )
    unverified = Finding("app.py", 3, "unverified fix", quote="line 3 changed", suggestion="nope\n")
    publish(forge(gl), change, review(change, f, unverified), GitLabConfig())
    assert gl.violations == [] and gl.rejected == []
    first, second = gl.diff_notes
    pos = first["position"]
    assert pos["new_line"] == start + 2  # the thread sits on the last line, as GitLab's UI puts it
    assert pos["line_range"]["start"]["type"] == pos["line_range"]["end"]["type"] == "new"
    assert pos["line_range"]["start"]["line_code"].endswith(f"_{21}_{start}")
    assert "```suggestion:-2+0\nfixed a\nfixed b\nfixed c\n```" in first["body"]
    assert "tests: 3 passed, was 1 failed" in first["body"]
    assert "suggestion" not in second["body"]  # only verified patches become suggestions


def test_suggestions_can_be_turned_off(gl: FakeGitLab, change: ChangeRequest) -> None:
    f = Finding("app.py", 3, "x", quote="line 3 changed", suggestion="y\n", verified=True)
    publish(forge(gl), change, review(change, f), GitLabConfig(suggestions=False))
    assert "suggestion" not in gl.diff_notes[0]["body"]


def test_line_outside_the_diff_goes_to_the_summary(gl: FakeGitLab, change: ChangeRequest) -> None:
    outside = Finding("app.py", 15, "far from the hunks", quote="line 15", in_diff=False)
    res = publish(forge(gl), change, review(change, outside), GitLabConfig())
    assert res.in_summary == 1 and gl.diff_notes == []
    assert "`app.py:15` (outside the diff)" in gl.notes[0]["body"]


def test_a_refused_position_is_never_lost(gl: FakeGitLab, change: ChangeRequest) -> None:
    # a finding the anchor stage believed in the diff, on a line GitLab does not show
    f = Finding("app.py", 15, "claimed in diff", quote="line 15")
    res = publish(forge(gl), change, review(change, f), GitLabConfig())
    # line 15 is not a diff line: no position is even tried, the file note carries it
    assert (res.comments, res.file_comments) == (0, 1)
    assert gl.diff_notes[0]["position"]["position_type"] == "file"
    gl.discussions.clear()
    gl.file_positions = False
    res = publish(forge(gl), change, review(change, f), GitLabConfig())
    assert res.in_summary == 1 and "claimed in diff" in gl.notes[0]["body"]


def test_line_code_error_from_gitlab_falls_back(gl: FakeGitLab, change: ChangeRequest) -> None:
    other = mr_diff(change.workdir, change.base_sha, change.head_sha).replace("@@ -1,", "@@ -2,")  # type: ignore[arg-type]
    gl.push(other.replace(" +1,", " +2,"), change.head_sha, start_sha="c" * 40)
    f = Finding("app.py", 3, "x", quote="line 3 changed")
    res = publish(forge(gl), change, review(change, f), GitLabConfig())
    assert [e for _, e in gl.rejected] == [LINE_CODE_ERROR]
    assert res.file_comments == 1 and len(res.rejections) == 1
    assert "refused the diff position of 1 finding(s)" in gl.notes[-1]["body"]


def test_rerun_is_idempotent_and_stale_threads_are_resolved(gl: FakeGitLab, change: ChangeRequest) -> None:
    a = Finding("app.py", 3, "a", quote="line 3 changed")
    b = Finding("app.py", 4, "b", quote="line 4")
    publish(forge(gl), change, review(change, a, b), GitLabConfig())
    n = len(gl.requests)
    res = publish(forge(gl), change, review(change, a, b), GitLabConfig())
    assert res.skipped == 2 and res.summary == "unchanged"
    # versions, the token's user (whose notes alone hold state), discussions
    assert [r.method for r in gl.requests[n:]] == ["GET", "GET", "GET"]
    res = publish(forge(gl), change, review(change, a), GitLabConfig())
    assert res.resolved == 1 and res.summary == "updated"
    by_body = {n["body"].split("\n\n")[1]: n for n in gl.diff_notes}
    assert by_body["b"]["resolved"] is True and by_body["a"]["resolved"] is False
    assert len([n for n in gl.notes if "prereview:summary" in n["body"]]) == 1


def test_threads_of_a_file_not_reviewed_this_time_stay_open(gl: FakeGitLab, change: ChangeRequest) -> None:
    a = Finding("app.py", 3, "a", quote="line 3 changed")
    publish(forge(gl), change, review(change, a), GitLabConfig())
    res = publish(
        forge(gl), change, review(change, skipped=(Skipped("app.py", "model error"),)), GitLabConfig()
    )
    assert res.resolved == 0 and gl.diff_notes[0]["resolved"] is False


def test_human_threads_are_never_resolved(gl: FakeGitLab, change: ChangeRequest) -> None:
    gl.add_note("looks fine to me")
    res = publish(forge(gl), change, review(change), GitLabConfig())
    assert res.resolved == 0 and res.summary == "created"


def test_discussions_over_the_cap_go_to_the_summary(gl: FakeGitLab, change: ChangeRequest) -> None:
    fs = [
        Finding("app.py", n, f"m{n}", quote=t)
        for n, t in ((3, "line 3 changed"), (4, "line 4"), (5, "line 5"))
    ]
    res = publish(forge(gl), change, review(change, *fs), GitLabConfig(max_discussions=2))
    assert (res.comments, res.in_summary) == (2, 1)
    assert "m5" in [n for n in gl.notes if "prereview:summary" in n["body"]][0]["body"]


def test_5xx_and_429_are_retried_with_backoff(gl: FakeGitLab, change: ChangeRequest) -> None:
    sleeps = Sleeps()
    gl.fail("POST", r"/discussions$", 502, times=2)
    gl.fail("GET", r"/versions$", 429, headers={"Retry-After": "1"})
    f = Finding("app.py", 3, "a", quote="line 3 changed")
    res = publish(forge(gl, sleeps), change, review(change, f), GitLabConfig())
    assert res.comments == 1 and len(gl.diff_notes) == 1
    assert sleeps == [1.0, 1.0, 2.0]
    assert gl.count("POST", r"/discussions$") == 3


def test_gitlab_down_is_a_one_line_error(gl: FakeGitLab, change: ChangeRequest) -> None:
    gl.fail("GET", r"/versions$", 503, times=99)
    sleeps = Sleeps()
    with pytest.raises(PrereviewError, match="GitLab answered 503 to list MR versions 5 time"):
        publish(forge(gl, sleeps), change, review(change), GitLabConfig())
    assert sleeps == [1.0, 2.0, 4.0, 8.0]


def test_api_only_fetch_matches_the_checkout(gl: FakeGitLab, change: ChangeRequest) -> None:
    got = forge(gl).fetch(ChangeRef("gitlab", "42", number=7))
    assert (got.base_sha, got.head_sha, got.title) == (change.base_sha, change.head_sha, gl.title)
    assert got.workdir is None and got.author == "dev"
    assert parse(got.diff_text) == parse(change.diff_text)


def test_api_only_fetch_on_gitlab_before_15_7(gl: FakeGitLab, change: ChangeRequest) -> None:
    gl.fail("GET", r"/diffs$", 404)  # no /diffs endpoint: /changes instead
    by_path = GitLabForge(gl.url, TOKEN, "group/project", sleep=Sleeps())
    got = by_path.fetch(ChangeRef("gitlab", "group/project", number=7))
    assert parse(got.diff_text) == parse(change.diff_text)
    assert gl.count("GET", r"/changes$") == 1
    assert any(r.path.startswith("/projects/group%2Fproject/") for r in gl.requests)


def test_paginated_discussions_are_all_read(gl: FakeGitLab, change: ChangeRequest) -> None:
    for i in range(130):
        gl.add_note(f"chatter {i}")
    fs = [Finding("app.py", 3, "a", quote="line 3 changed")]
    publish(forge(gl), change, review(change, *fs), GitLabConfig())
    publish(forge(gl), change, review(change, *fs), GitLabConfig())
    assert len(gl.diff_notes) == 1
    # 2 pages of 100, twice; and once more before the first run creates the summary (another run may have)
    assert gl.count("GET", r"/discussions$") == 6


def test_missing_merge_request_is_a_clear_error(gl: FakeGitLab) -> None:
    with pytest.raises(PrereviewError, match="404 to get merge request !99 in project 42"):
        forge(gl).fetch(ChangeRef("gitlab", "42", number=99))


def test_award_emoji_for_the_webhook_server(gl: FakeGitLab) -> None:
    note = gl.add_note("/review")
    forge(gl).award_emoji(7, note["id"], "eyes")
    assert gl.award_emoji[0]["name"] == "eyes" and gl.award_emoji[0]["awardable_id"] == note["id"]
    assert gl.violations == []


def test_forge_repr_hides_the_token(gl: FakeGitLab) -> None:
    assert TOKEN not in repr(forge(gl))


def test_renamed_file_positions_carry_both_paths(make_repo: Callable[..., Path]) -> None:
    body = "".join(f"def f{i}():\n    return {i}\n" for i in range(12))
    repo = make_repo(
        {"lib/old_name.py": body},
        {"lib/old_name.py": None, "lib/new_name.py": body.replace("return 5", "return -5")},
    )
    base, head = rev(repo, "HEAD~1"), rev(repo)
    diff = mr_diff(repo, base, head)
    assert "rename from lib/old_name.py" in diff
    ch = ChangeRequest(ChangeRef("gitlab", "42", base, head, 7), base, head, diff, workdir=repo)
    with FakeGitLab(diff_text=diff, base_sha=base, head_sha=head) as fake:
        f = Finding("lib/new_name.py", 12, "negative", quote="    return -5")
        res = publish(forge(fake), ch, review(ch, f), GitLabConfig())
        assert res.comments == 1 and fake.rejected == [] and fake.violations == []
        pos = fake.diff_notes[0]["position"]
        assert (pos["old_path"], pos["new_path"], pos["new_line"]) == (
            "lib/old_name.py",
            "lib/new_name.py",
            12,
        )
        assert_positions_on_diff(fake)


def test_summary_names_the_new_head_even_with_the_same_findings(
    gl: FakeGitLab, change: ChangeRequest
) -> None:
    from dataclasses import replace

    a = Finding("app.py", 3, "a", quote="line 3 changed")
    publish(forge(gl), change, review(change, a), GitLabConfig())
    slower = replace(review(change, a), stats=Stats(model="scripted", seconds_total=9.5))
    assert publish(forge(gl), change, slower, GitLabConfig()).summary == "unchanged"  # timings alone: no edit
    moved = replace(review(change, a), head="e" * 40)
    assert publish(forge(gl), change, moved, GitLabConfig()).summary == "updated"
    assert "head eeeeeeeeeeee" in [n for n in gl.notes if "prereview:summary" in n["body"]][0]["body"]


def test_a_reporter_token_posts_but_leaves_outdated_threads_open(change: ChangeRequest) -> None:
    with FakeGitLab(
        diff_text=change.diff_text,
        base_sha=change.base_sha,
        head_sha=change.head_sha,
        members={"prereview-bot": 20},
    ) as fake:
        a = Finding("app.py", 3, "a", quote="line 3 changed")
        b = Finding("app.py", 4, "b", quote="line 4")
        publish(forge(fake), change, review(change, a, b), GitLabConfig())
        res = publish(forge(fake), change, review(change, a), GitLabConfig())
        assert res.resolved == 0 and res.cannot_resolve
        assert "Developer" in res.line()
        assert "stay open" in [n for n in fake.notes if "prereview:summary" in n["body"]][0]["body"]
        assert all(n["resolved"] is False for n in fake.diff_notes)


def test_a_guest_token_is_a_permission_error(change: ChangeRequest) -> None:
    from bot.forges.base import PermissionDenied

    with (
        FakeGitLab(
            diff_text=change.diff_text,
            base_sha=change.base_sha,
            head_sha=change.head_sha,
            members={"prereview-bot": 10},
        ) as fake,
        pytest.raises(PermissionDenied, match="403 to create a discussion"),
    ):
        publish(forge(fake), change, review(change, Finding("app.py", 3, "a", quote="x")), GitLabConfig())


def test_findings_on_the_same_line_are_one_thread(gl: FakeGitLab, change: ChangeRequest) -> None:
    from bot.render.markdown import fingerprints_in

    a = Finding("app.py", 3, "first problem", quote="line 3 changed", category="security", severity="high")
    b = Finding("app.py", 3, "second problem", quote="line 3 changed", category="bug")
    res = publish(forge(gl), change, review(change, a, b), GitLabConfig())
    [thread] = gl.diff_notes
    assert "first problem" in thread["body"] and "second problem" in thread["body"]
    assert fingerprints_in(thread["body"]) == {a.fingerprint, b.fingerprint}
    assert res.comments == 1 and res.in_summary == 0 and gl.violations == []
    again = publish(forge(gl), change, review(change, a, b), GitLabConfig())
    assert again.skipped == 2 and len(gl.diff_notes) == 1
