"""One incremental-review algorithm (bot/change/incremental.py): which hunks of the PR diff are new since
the last review. A line a commit only moved is not new; a changed line, or a second copy of a line in a new
place, is."""

from __future__ import annotations

from bot.change.diff import parse
from bot.change.incremental import added_at, added_lines, new_hunks
from tests.conftest import git


def _diff(*hunks: tuple[int, list[str]]) -> str:
    """A PR diff of a.py: each hunk starts at a new-side line and adds its lines after one context line."""
    out = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n"
    for start, added in hunks:
        out += f"@@ -{start},1 +{start},{len(added) + 1} @@\n ctx{start}\n" + "".join(
            f"+{x}\n" for x in added
        )
    return out


def _kept(diff_text: str) -> list[list[str]]:
    return [[ln.text for ln in h.added] for f in parse(diff_text).files for h in f.hunks]


def test_only_hunks_with_lines_added_since_last_time() -> None:
    old = _diff((1, ["y = 1"]))
    new = _diff((1, ["y = 1"]), (10, ["w = 2"]))
    assert _kept(new_hunks(new, added_lines(old))) == [["w = 2"]]
    assert new_hunks(old, added_lines(old)) == ""
    assert _kept(new_hunks(old, {})) == [["y = 1"]]


def test_a_moved_line_is_not_new_but_a_changed_one_is() -> None:
    old = _diff((1, ["a = 1", "b = 2"]), (20, ["c = 3"]))
    moved = _diff((1, ["a = 1"]), (20, ["c = 3", "b = 2"]))  # `b = 2` moved to the second hunk
    assert new_hunks(moved, added_lines(old)) == ""
    changed = _diff((1, ["a = 1"]), (20, ["c = 3", "b = 20"]))
    assert _kept(new_hunks(changed, added_lines(old))) == [["c = 3", "b = 20"]]  # the hunk, whole
    reindented = _diff((1, ["a = 1", "    b = 2"]), (20, ["c = 3"]))
    assert _kept(new_hunks(reindented, added_lines(old))) == [["a = 1", "    b = 2"]]


def test_a_second_copy_of_a_line_in_a_new_place_is_new() -> None:
    old = _diff((20, ["x = f()", "return None"]))
    new = _diff((1, ["return None"]), (20, ["x = f()", "return None"]))
    assert _kept(new_hunks(new, added_lines(old))) == [["return None"]]  # the new hunk, not the old one


def test_added_at_reads_the_pr_diff_at_an_earlier_head(make_repo) -> None:
    repo = make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 1\nb = 2\n"})
    base, head = git(repo, "rev-parse", "HEAD~1").strip(), git(repo, "rev-parse", "HEAD").strip()
    assert added_at(repo, base, head) == {"a.py": ["b = 2"]}
    assert added_at(repo, base, "f" * 40) is None  # force-pushed away: a full review
    assert added_at(repo, base, "--output=x") is None  # never an option
