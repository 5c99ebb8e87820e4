"""Diff positions: prereview's (bot.forges.gitlab.placement) against the fake's own GitLab emulation."""

from __future__ import annotations

import difflib
import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.change.diff import parse
from bot.forges.gitlab.placement import DiffRefs, anchor, file_position, gitlab_lines, line_code
from bot.types import Finding
from tests.fakes.gitlab_api import INCOMPLETE_ERROR, LINE_CODE_ERROR, FakeGitLab

REFS = DiffRefs("a" * 40, "b" * 40, "c" * 40)


def git_style(old: list[str], new: list[str], path: str = "f.py") -> str:
    body = "".join(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}", n=3))
    return f"diff --git a/{path} b/{path}\n" + body if body else ""


def fake_for(diff_text: str) -> FakeGitLab:
    return FakeGitLab(
        diff_text=diff_text, base_sha=REFS.base_sha, start_sha=REFS.start_sha, head_sha=REFS.head_sha
    )


OLD = [f"l{i}\n" for i in range(1, 21)]
NEW = OLD[:4] + ["new a\n", "new b\n"] + OLD[4:9] + OLD[10:]  # 2 added after l4, l10 removed
DIFF = git_style(OLD, NEW)


def test_line_code_is_gitlabs_format() -> None:
    assert line_code("app/models/user.rb", 5, 5) == hashlib.sha1(b"app/models/user.rb").hexdigest() + "_5_5"


def test_gitlab_numbering_keeps_both_counters() -> None:
    f = parse(DIFF).files[0]
    lines = gitlab_lines(f)
    added = [g for g in lines if g.kind == "+"]
    removed = [g for g in lines if g.kind == "-"]
    assert [(g.old_pos, g.new_pos) for g in added] == [
        (5, 5),
        (5, 6),
    ]  # old counter waits at the next old line
    assert [(g.old_pos, g.new_pos) for g in removed] == [(10, 12)]
    assert added[0].old_line is None and removed[0].new_line is None


def test_table_of_positions() -> None:
    diff = parse(DIFF)
    cases = [
        (Finding("f.py", 5, "m"), {"new_line": 5}),
        (Finding("f.py", 4, "m"), {"old_line": 4, "new_line": 4}),
        (Finding("f.py", 10, "m", side="LEFT"), {"old_line": 10}),
    ]
    fake = fake_for(DIFF)
    for f, want in cases:
        a = anchor(f, diff, REFS)
        assert a is not None
        got = {k: v for k, v in a.position.items() if k in ("old_line", "new_line")}
        assert got == want
        assert fake.position_error(a.position) is None
    assert anchor(Finding("f.py", 1, "m"), diff, REFS) is None  # line 1 is outside every hunk
    assert anchor(Finding("other.py", 5, "m"), diff, REFS) is None


def test_multi_line_range_and_suggestion_header() -> None:
    diff = parse(DIFF)
    a = anchor(Finding("f.py", 4, "m", end_line=6), diff, REFS)
    assert a is not None
    assert a.position["new_line"] == 6 and "old_line" not in a.position
    start = {"line_code": line_code("f.py", 4, 4), "type": "old", "old_line": 4, "new_line": 4}
    assert a.position["line_range"]["start"] == start
    assert a.position["line_range"]["end"] == {
        "line_code": line_code("f.py", 5, 6),
        "type": "new",
        "new_line": 6,
    }
    assert a.suggestion_header == "suggestion:-2+0"
    assert fake_for(DIFF).position_error(a.position) is None
    left = anchor(Finding("f.py", 10, "m", side="LEFT", suggestion="x"), diff, REFS)
    assert left is not None and left.suggestion_header is None  # nothing to suggest on a removed line


def test_fake_answers_like_gitlab() -> None:
    fake = fake_for(DIFF)
    base = {
        "base_sha": REFS.base_sha,
        "start_sha": REFS.start_sha,
        "head_sha": REFS.head_sha,
        "position_type": "text",
        "old_path": "f.py",
        "new_path": "f.py",
    }
    assert (
        fake.position_error({**base, "new_line": 5, "old_line": 5}) == LINE_CODE_ERROR
    )  # old_line on an added line
    assert fake.position_error({**base, "new_line": 1}) == LINE_CODE_ERROR  # outside the hunks
    assert fake.position_error({**base, "new_line": 4}) == LINE_CODE_ERROR  # context line needs both
    assert fake.position_error(base) == INCOMPLETE_ERROR
    assert fake.position_error({**base, "new_line": 5, "head_sha": "d" * 40}) == LINE_CODE_ERROR
    assert fake.position_error({**base, "position_type": "file"}) is None
    assert file_position("f.py", parse(DIFF), REFS) == {**base, "position_type": "file"}


lines_st = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d\n", "e\n", "\n", "x = 1\n"]), max_size=30)


@settings(max_examples=150, deadline=None)
@given(old=lines_st, new=lines_st, data=st.data())
def test_every_diff_line_gets_a_position_gitlab_accepts(
    old: list[str], new: list[str], data: st.DataObject
) -> None:
    text = git_style(old, new)
    diff = parse(text)
    fake = fake_for(text)
    for f in diff.files:
        for n in f.by_new:
            a = anchor(Finding(f.path, n, "m"), diff, REFS)
            assert a is not None and fake.position_error(a.position) is None, (n, a)
        for n in f.by_old:
            a = anchor(Finding(f.path, n, "m", side="LEFT"), diff, REFS)
            assert a is not None and fake.position_error(a.position) is None, (n, a)
        for h in f.hunks:  # any range inside one hunk is a valid line_range
            news = [ln.new_no for ln in h.lines if ln.new_no is not None]
            if len(news) >= 2:
                i = data.draw(st.integers(0, len(news) - 2))
                j = data.draw(st.integers(i + 1, len(news) - 1))
                a = anchor(Finding(f.path, news[i], "m", end_line=news[j]), diff, REFS)
                assert a is not None and "line_range" in a.position
                assert fake.position_error(a.position) is None, a
                assert a.suggestion_header == f"suggestion:-{news[j] - news[i]}+0"
        outside = set(range(1, len(new) + 2)) - set(f.by_new)
        for n in outside:
            assert anchor(Finding(f.path, n, "m"), diff, REFS) is None
