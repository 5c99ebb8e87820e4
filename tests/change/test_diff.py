"""bot.diff on real `git diff` output: golden diffs, live temp repos, and property tests of the line maps."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.change import git as gitmod
from bot.change.diff import Diff, FileDiff, edit_at, parse, render_hunk
from bot.types import PrereviewError

DATA = Path(__file__).resolve().parents[1] / "data" / "diffs"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8", "replace")


def _write(repo: Path, files: dict[str, bytes | None]) -> None:
    for name, data in files.items():
        p = repo / name
        if data is None:
            p.unlink()
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)


def commit_pair(
    root: Path,
    base: dict[str, bytes],
    head: dict[str, bytes | None],
    *,
    chmod: tuple[str, ...] = (),
    renames: dict[str, str] | None = None,
) -> Diff:
    """Real git: commit `base`, then apply renames/writes/chmods and commit; parse the diff the CLI sees."""
    repo = root
    repo.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q", "-b", "main")
    _write(repo, dict(base))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    for old, new in (renames or {}).items():
        _git(repo, "mv", old, new)
    _write(repo, head)
    for name in chmod:
        (repo / name).chmod(0o755)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "head")
    return parse(gitmod.diff(repo, "HEAD~", "HEAD"))


def lines_of(f: FileDiff, kind: str) -> list[tuple[int | None, int | None, str]]:
    return [(ln.old_no, ln.new_no, ln.text) for h in f.hunks for ln in h.lines if ln.kind == kind]


# --------------------------------------------------------------------------------------------- goldens
def test_golden_several_hunks() -> None:
    d = parse((DATA / "several_hunks.diff").read_text())
    (f,) = d.files
    assert (f.path, f.old_path, f.status, f.is_binary) == ("nums.txt", "nums.txt", "modified", False)
    assert [(h.old_start, h.old_len, h.new_start, h.new_len) for h in f.hunks] == [
        (2, 7, 2, 7),
        (17, 7, 17, 6),
        (38, 6, 37, 8),
        (55, 6, 56, 5),
    ]
    assert lines_of(f, "+") == [(None, 5, "five"), (None, 40, "forty-one-new"), (None, 41, "40b")]
    assert lines_of(f, "-") == [(5, None, "5"), (20, None, "20"), (58, None, "58")]
    assert [h.deletion_only for h in f.hunks] == [False, True, False, True]
    assert d.hunk_count == 4 and f.changed_lines == 6
    # context lines carry both numbers, shifted by the edits above them
    ctx = {ln.old_no: ln.new_no for h in f.hunks for ln in h.lines if ln.kind == " "}
    assert ctx[2] == 2 and ctx[21] == 20 and ctx[41] == 42 and ctx[59] == 59
    # comments may sit on added and context lines (RIGHT) and on removed lines (LEFT)
    assert d.has_line("nums.txt", 40) and d.has_line("nums.txt", 42) and d.has_line("nums.txt", 5)
    assert not d.has_line("nums.txt", 30) and not d.has_line("nums.txt", 1)
    assert d.has_line("nums.txt", 20, "LEFT") and not d.has_line("nums.txt", 21, "LEFT")
    assert not d.has_line("other.txt", 5)
    assert render_hunk(f, f.hunks[2]).splitlines()[4] == "   40 + forty-one-new"


def test_golden_mixed_change() -> None:
    """Stored `git diff -M` of: new file, binary edit, CRLF edit, no-newline-at-EOF, deletion,
    latin-1 content, pure rename, rename with edit, mode-only change."""
    d = parse((DATA / "mixed.diff").read_bytes().decode("utf-8", "replace"))
    by = {f.path: f for f in d.files}
    assert set(by) == {
        "added.py",
        "bin.dat",
        "crlf.txt",
        "eol.txt",
        "gone.txt",
        "latin.txt",
        "moved2.txt",
        "renamed.txt",
        "run.sh",
    }
    assert by["added.py"].status == "added" and lines_of(by["added.py"], "+") == [
        (None, 1, "new"),
        (None, 2, "file"),
    ]
    assert by["bin.dat"].is_binary and not by["bin.dat"].hunks
    assert lines_of(by["crlf.txt"], "+") == [(None, 2, "Y")]  # CR stripped from the text
    assert lines_of(by["crlf.txt"], "-") == [(2, None, "y")]
    assert lines_of(by["eol.txt"], "+") == [(None, 1, "noeol"), (None, 2, "more")]
    assert lines_of(by["eol.txt"], "-") == [(1, None, "noeol")]
    assert all("No newline" not in ln.text for h in by["eol.txt"].hunks for ln in h.lines)
    assert by["gone.txt"].status == "deleted" and by["gone.txt"].hunks[0].deletion_only
    assert d.has_line("gone.txt", 2, "LEFT") and not d.has_line("gone.txt", 1)
    assert lines_of(by["latin.txt"], "+") == [(None, 1, "caf\ufffd au lait")]
    assert (by["moved2.txt"].status, by["moved2.txt"].old_path, by["moved2.txt"].hunks) == (
        "renamed",
        "ren2.txt",
        (),
    )
    assert (by["renamed.txt"].status, by["renamed.txt"].old_path) == ("renamed", "ren.txt")
    assert lines_of(by["renamed.txt"], "+") == [(None, 3, "THREE")]
    assert d.has_line("renamed.txt", 3) and not d.has_line("ren.txt", 3)
    assert (by["run.sh"].status, by["run.sh"].hunks) == ("modified", ())


def test_golden_tricky_names_and_marker_like_content() -> None:
    """Spaces (git appends a TAB to ---/+++), UTF-8 names, removed `-- x` lines that read `--- x`,
    added `+++ x`, an empty new file, a symlink, new and deleted binaries."""
    d = parse((DATA / "tricky_names.diff").read_text(encoding="utf-8"))
    by = {f.path: f for f in d.files}
    assert set(by) == {"delbin.bin", "empty.txt", "link", "my file.py", "newbin.png", "q.sql", "ünï.py"}
    assert lines_of(by["my file.py"], "+") == [(None, 2, "b")]
    assert lines_of(by["ünï.py"], "+") == [(None, 2, "c")]
    q = by["q.sql"]
    assert lines_of(q, "-") == [(2, None, "-- old comment"), (4, None, "++ x")]
    assert lines_of(q, "+") == [(None, 3, "+++ added"), (None, 4, "--- also")]
    assert (by["empty.txt"].status, by["empty.txt"].hunks) == ("added", ())
    assert by["newbin.png"].is_binary and by["newbin.png"].status == "added"
    assert by["delbin.bin"].is_binary and by["delbin.bin"].status == "deleted"


def test_empty_and_garbage() -> None:
    assert parse("").files == () and parse("  \n").files == ()
    with pytest.raises(PrereviewError, match="git diff"):
        parse("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n+only one line\n")


# ------------------------------------------------------------------------------------- live git repos
def test_live_git_edge_cases(tmp_path: Path) -> None:
    big = b"".join(b"line %d\n" % i for i in range(1, 41))
    base = {
        "crlf.py": b"a = 1\r\nb = 2\r\nc = 3\r\n",
        "eol.py": b"x = 1",
        "old.py": big,
        "same.py": b"unchanged = True\n",
        "gone.py": b"bye = 1\n",
        "tool.sh": b"echo hi\n",
        "img.bin": b"\x00\x01\x02\x03",
        "latin1.py": "s = 'caf\xe9'\n".encode("latin-1"),
        "shrink.py": b"keep = 1\ndrop = 2\nkeep2 = 3\n",
    }
    head: dict[str, bytes | None] = {
        "crlf.py": b"a = 1\r\nb = 20\r\nc = 3\r\nd = 4\r\n",
        "eol.py": b"x = 1\ny = 2",
        "new.py": b"print('hello')\n",
        "gone.py": None,
        "img.bin": b"\x00\x09\x02\x03",
        "latin1.py": "s = 'caf\xe9 cr\xe8me'\n".encode("latin-1"),
        "shrink.py": b"keep = 1\nkeep2 = 3\n",
        "moved.py": big.replace(b"line 20\n", b"line twenty\n"),
    }
    d = commit_pair(
        tmp_path / "r",
        base,
        head,
        chmod=("tool.sh",),
        renames={"old.py": "moved.py", "same.py": "same_renamed.py"},
    )
    by = {f.path: f for f in d.files}
    assert lines_of(by["crlf.py"], "+") == [(None, 2, "b = 20"), (None, 4, "d = 4")]
    assert lines_of(by["eol.py"], "+") == [(None, 1, "x = 1"), (None, 2, "y = 2")]
    assert by["new.py"].status == "added" and d.has_line("new.py", 1)
    assert by["gone.py"].status == "deleted" and not d.has_line("gone.py", 1)
    assert by["img.bin"].is_binary
    assert by["latin1.py"].hunks[0].added[0].text == "s = 'caf\ufffd cr\ufffdme'"
    assert by["shrink.py"].hunks[0].deletion_only and d.has_line("shrink.py", 2, "LEFT")
    mv = by["moved.py"]
    assert (mv.status, mv.old_path) == ("renamed", "old.py") and lines_of(mv, "+") == [
        (None, 20, "line twenty")
    ]
    assert (by["same_renamed.py"].status, by["same_renamed.py"].hunks) == ("renamed", ())
    assert (by["tool.sh"].status, by["tool.sh"].hunks) == ("modified", ())


# ------------------------------------------------------------------------------ property: line maps
_WORDS = st.sampled_from(["a", "b", "c", "x = 1", "", "  return y", "-- sql", "+++ z", "\\ slash", "é"])


@st.composite
def file_edit(draw: st.DrawFn) -> tuple[list[str], list[str], bool, bool, bool, int]:
    old = draw(st.lists(_WORDS, min_size=0, max_size=30))
    new = list(old)
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(["ins", "del", "rep"]))
        i = draw(st.integers(0, len(new)))
        if op == "ins":
            new[i:i] = draw(st.lists(_WORDS, min_size=1, max_size=4))
        elif new:
            i = min(i, len(new) - 1)
            if op == "del":
                del new[i : i + draw(st.integers(1, 3))]
            else:
                new[i] = draw(_WORDS) + "!"
    return old, new, draw(st.booleans()), draw(st.booleans()), draw(st.booleans()), draw(st.integers(0, 4))


def _text(lines: list[str], eol: bool, crlf: bool) -> bytes:
    nl = "\r\n" if crlf else "\n"
    s = nl.join(lines) + (nl if eol and lines else "")
    return s.encode("utf-8")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=file_edit())
def test_line_maps_match_the_files(tmp_path: Path, case: tuple) -> None:
    """Every +/- / context line maps to the same text at its number in the new / old file, and the
    hunks rebuild the new file from the old one exactly."""
    old, new, old_eol, new_eol, crlf, ctx = case
    (tmp_path / "old.txt").write_bytes(_text(old, old_eol, crlf))
    (tmp_path / "new.txt").write_bytes(_text(new, new_eol, crlf))
    proc = subprocess.run(
        ["git", "diff", "--no-index", "--no-color", f"-U{ctx}", "old.txt", "new.txt"],
        cwd=tmp_path,
        capture_output=True,
    )
    assert proc.returncode in (0, 1), proc.stderr
    d = parse(proc.stdout.decode("utf-8"))
    if proc.returncode == 0:
        assert d.files == ()
        return
    (f,) = d.files
    old_lines = _text(old, old_eol, crlf).decode().splitlines()
    new_lines = _text(new, new_eol, crlf).decode().splitlines()
    rebuilt: list[str] = []
    pos = 1
    for h in f.hunks:
        # a hunk starts at old_start; a pure insertion (old_len 0) goes *after* old line old_start
        upto = h.old_start if h.old_len == 0 else h.old_start - 1
        rebuilt += old_lines[pos - 1 : upto]
        pos = upto + 1
        for ln in h.lines:
            if ln.kind == "+":
                assert ln.old_no is None and new_lines[ln.new_no - 1] == ln.text
                assert d.has_line(f.path, ln.new_no)
            elif ln.kind == "-":
                assert ln.new_no is None and old_lines[ln.old_no - 1] == ln.text
                assert d.has_line(f.path, ln.old_no, "LEFT")
            else:
                assert old_lines[ln.old_no - 1] == ln.text == new_lines[ln.new_no - 1]
            if ln.old_no is not None:
                rebuilt += old_lines[pos - 1 : ln.old_no - 1]
                pos = ln.old_no + 1
            if ln.kind != "-":
                rebuilt.append(ln.text)
    rebuilt += old_lines[pos - 1 :]
    assert rebuilt == new_lines
    # has_line(RIGHT) is true exactly on the new-side numbers inside hunks
    inside = {ln.new_no for h in f.hunks for ln in h.lines if ln.new_no is not None}
    assert {n for n in range(1, len(new_lines) + 2) if d.has_line(f.path, n)} == inside


def test_quoted_file_names(tmp_path: Path) -> None:
    """git C-quotes names with TAB, quotes, backslashes, newlines (and non-ASCII unless quotepath=off)."""
    names = ["tab\there.py", 'we"ird.py', "back\\slash.py", "new\nline.py", "ünï.py", "sp ace.py"]
    d = commit_pair(tmp_path / "r", {n: b"a = 1\n" for n in names}, {n: b"a = 1\nb = 2\n" for n in names})
    assert sorted(f.path for f in d.files) == sorted(names)
    assert all(d.has_line(n, 2) for n in names)
    quoted = _git(tmp_path / "r", "-c", "core.quotepath=on", "diff", "HEAD~", "HEAD")
    assert '"b/\\303\\274n\\303\\257.py"' in quoted
    assert sorted(f.path for f in parse(quoted).files) == sorted(names)
    renamed = commit_pair(
        tmp_path / "r2", {'old"name.py': b"x = 1\n" * 5}, {}, renames={'old"name.py': "tab\tnew.py"}
    )
    (f,) = renamed.files
    assert (f.status, f.old_path, f.path) == ("renamed", 'old"name.py', "tab\tnew.py")


def test_lone_cr_and_form_feed_stay_inside_a_line(tmp_path: Path) -> None:
    d = commit_pair(tmp_path / "r", {"m.txt": b"a\rb\nc\n"}, {"m.txt": b"a\rb\nc\x0cd\nx\r\n"})
    (f,) = d.files
    assert [(ln.kind, ln.new_no, ln.text) for ln in f.hunks[0].lines] == [
        (" ", 1, "a\rb"),
        ("-", None, "c"),
        ("+", 2, "c\x0cd"),
        ("+", 3, "x"),
    ]


def test_edit_at_gives_the_removed_and_added_lines_at_a_new_side_line():
    d = parse(
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,5 +1,5 @@\n def f(x):\n"
        "-    return x + 1\n+    y = x\n+    return y - 1\n \n-    z = 2\n a = 1\n"
        "@@ -10,2 +10,3 @@\n b = 1\n+c = 2\n d = 3\n"
    )
    f = d.files[0]
    assert edit_at(f, 3) == (("    return x + 1",), ("    y = x", "    return y - 1"))
    assert edit_at(f, 4) == (("    z = 2",), ())  # a context line with code deleted right below it
    assert edit_at(f, 1) == (("    return x + 1",), ("    y = x", "    return y - 1"))
    assert edit_at(f, 11) == ((), ())  # only added there: nothing was replaced
    assert edit_at(f, 40) == ((), ())  # outside every hunk
