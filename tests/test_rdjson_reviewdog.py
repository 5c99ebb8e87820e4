"""rdjson suggestions read the way reviewdog reads them.

The helpers below port, line for line, what reviewdog (github.com/reviewdog/reviewdog) does with a
diagnostic's first suggestion: filter/filter.go (source lines and `FirstSuggestionInDiffContext`),
service/github/github.go (`githubCommentLineRange`, `buildSingleSuggestion`,
`buildNonLineBasedSuggestion`) and service/gitlab/gitlab_mr_discussion.go (`buildSingleSuggestion`:
a `suggestion:-0+N` block on the diagnostic's start line). Applying the posted block the way GitHub and
GitLab apply a suggestion must give the file our Finding describes: lines line..end_line replaced by the
suggestion, nothing else touched, and the GitHub comment must cover exactly those lines.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from bot.render import render
from bot.types import Coverage, Finding, Review, Stats

FILE = [f"line {n}" for n in range(1, 11)]  # the head file; every line is in the diff context


class SuggestionError(Exception):
    """reviewdog's "reviewdog suggestion error" (it posts the error text instead of a suggestion)."""


def _line(pos: dict[str, Any] | None) -> int:
    return int((pos or {}).get("line", 0))


def _col(pos: dict[str, Any] | None) -> int:
    return int((pos or {}).get("column", 0))


def filter_sources(diag: dict[str, Any], diff_lines: set[int]) -> tuple[dict[int, str], bool]:
    """filter.go: source lines of the location and of each suggestion's start..end (inclusive); whether
    the first suggestion's lines all lie in the diff context."""
    rng = diag["location"]["range"]
    start, end = _line(rng.get("start")), _line(rng.get("end")) or _line(rng.get("start"))
    sources = {n: FILE[n - 1] for n in range(start, end + 1) if n in diff_lines}
    first_in_diff = False
    for i, s in enumerate(diag.get("suggestions", [])):
        ok = True
        for n in range(_line(s["range"].get("start")), _line(s["range"].get("end")) + 1):
            if n in diff_lines and 0 < n <= len(FILE):
                sources[n] = FILE[n - 1]
            else:
                ok = False
        if i == 0:
            first_in_diff = ok
    return sources, first_in_diff


def github_comment_range(diag: dict[str, Any], first_in_diff: bool) -> tuple[int, int]:
    """githubCommentLineRange: the first suggestion's lines when in the diff, else the location's."""
    suggestions = diag.get("suggestions", [])
    rng = suggestions[0]["range"] if first_in_diff and suggestions else diag["location"]["range"]
    start, end = _line(rng.get("start")), _line(rng.get("end"))
    return start, end or start


def github_block(diag: dict[str, Any], s: dict[str, Any], sources: dict[int, str], first: bool) -> str:
    """github.go buildSingleSuggestion (and buildNonLineBasedSuggestion when a column is set)."""
    start, end = s["range"].get("start"), s["range"].get("end")
    s_line, e_line = _line(start), _line(end) or _line(start)
    g_start, g_end = github_comment_range(diag, first)
    if (s_line, e_line) != (g_start, g_end):
        raise SuggestionError(f"comment range L{g_start}-L{g_end} v.s. L{s_line}-L{e_line}")
    text = s.get("text", "")
    if _col(start) > 0 or _col(end) > 0:
        if _line(start) not in sources or _line(end) not in sources:
            raise SuggestionError("source line is not available for this suggestion")
        head = sources[_line(start)][: max(_col(start) - 1, 0)]
        text = head + text + sources[_line(end)][max(_col(end) - 1, 0) :]
        return "```suggestion\n" + text + "\n```"
    return "```suggestion\n" + (text + "\n" if text else "") + "```"


def gitlab_block(s: dict[str, Any]) -> str:
    """gitlab_mr_discussion.go buildSingleSuggestion: `suggestion:-0+<end-start>`."""
    n = _line(s["range"]["end"]) - _line(s["range"]["start"])
    text = s.get("text", "")
    return f"```suggestion:-0+{n}\n" + (text + "\n" if text else "") + "```"


def block_lines(block: str) -> tuple[str, list[str]]:
    """A fenced block's info string and its content lines, as a Markdown renderer reads it."""
    lines = block.split("\n")
    assert lines[0].startswith("```") and lines[-1] == "```"
    return lines[0][3:], lines[1:-1]


def apply_github(comment: tuple[int, int], block: str) -> list[str]:
    _, content = block_lines(block)
    start, end = comment
    return FILE[: start - 1] + content + FILE[end:]


def apply_gitlab(comment_line: int, block: str) -> list[str]:
    info, content = block_lines(block)
    m = re.fullmatch(r"suggestion:-(\d+)\+(\d+)", info)
    assert m is not None
    start, end = comment_line - int(m[1]), comment_line + int(m[2])
    return FILE[: start - 1] + content + FILE[end:]


def expected(f: Finding) -> list[str]:
    """Our meaning of a Finding's suggestion: it replaces lines line..end_line."""
    assert f.suggestion is not None
    new = f.suggestion.split("\n")
    if f.suggestion.endswith("\n"):
        new = new[:-1]
    return FILE[: f.line - 1] + (new if f.suggestion else []) + FILE[f.last_line :]


def _diagnostic(f: Finding) -> dict[str, Any]:
    review = Review(base="a" * 40, head="b" * 40, findings=(f,), stats=Stats(), coverage=Coverage())
    (diag,) = json.loads(render(review, "rdjson"))["diagnostics"]
    return diag  # type: ignore[no-any-return]


CASES = [
    Finding("a.py", 3, "range, trailing newline", end_line=5, suggestion="new 3\nnew 4\n", verified=True),
    Finding("a.py", 4, "one line, no newline", suggestion="new 4", verified=True),
    Finding("a.py", 2, "lines to delete", end_line=3, suggestion="", verified=True),
    Finding("a.py", 6, "grows", end_line=6, suggestion="a\nb\nc", verified=True),
    Finding("a.py", 9, "keeps an empty line", end_line=10, suggestion="x\n\n", verified=True),
]


@pytest.mark.parametrize("f", CASES, ids=[f.message for f in CASES])
@pytest.mark.parametrize("diff_lines", [set(range(1, 11)), None], ids=["all-in-diff", "only-the-finding"])
def test_github_posts_the_suggestion_on_exactly_the_finding_lines(f: Finding, diff_lines: set[int] | None):
    diag = _diagnostic(f)
    lines = diff_lines if diff_lines is not None else set(range(f.line, f.last_line + 1))
    sources, first = filter_sources(diag, lines)
    (s,) = diag["suggestions"]
    comment = github_comment_range(diag, first)
    assert comment == (f.line, f.last_line)  # the comment does not widen
    block = github_block(diag, s, sources, first)  # and no "suggestion error"
    assert apply_github(comment, block) == expected(f)


@pytest.mark.parametrize("f", CASES, ids=[f.message for f in CASES])
def test_gitlab_suggestion_replaces_exactly_the_finding_lines(f: Finding) -> None:
    diag = _diagnostic(f)
    (s,) = diag["suggestions"]
    comment_line = _line(diag["location"]["range"]["start"])  # reviewdog comments on the start line
    assert apply_gitlab(comment_line, gitlab_block(s)) == expected(f)


def test_a_suggestion_reviewdog_cannot_express_is_left_out() -> None:
    # One empty line: reviewdog's line-based block would read it as a deletion (or two empty lines).
    diag = _diagnostic(Finding("a.py", 3, "blank it", suggestion="\n", verified=True))
    assert "suggestions" not in diag
    unverified = _diagnostic(Finding("a.py", 3, "guess", suggestion="x", verified=False))
    assert "suggestions" not in unverified
