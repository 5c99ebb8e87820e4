"""A local review and the working tree (issue 29, item 7): uncommitted changes and an edited
`.prereview.yml` are said in the notes, not skipped silently; `--worktree` reviews the working tree."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.conftest import git
from tests.test_cli import one_line_error, run_cli

SCRIPTED = {
    "model": {"backend": "scripted"},
    "scanners": {"secrets": False, "bandit": False, "patterns": False},
    "tests": "off",
}


def review(repo: Path, capsys, *flags: str) -> tuple[int, dict, str]:
    code, out, err = run_cli(["review", "--repo", str(repo), "--format", "json", *flags], capsys)
    return code, (json.loads(out) if out else {}), err


def test_uncommitted_changes_are_named_and_worktree_reviews_them(make_repo, capsys) -> None:
    cfg = yaml.safe_dump(SCRIPTED)
    repo = make_repo({".prereview.yml": cfg, "a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    (repo / "b.py").write_text("b = 1\n")
    git(repo, "add", "b.py")  # staged, not committed
    (repo / "a.py").write_text("a = 3\n")  # not even staged
    head, status = git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain")

    _, doc, _ = review(repo, capsys, "--base", "HEAD~")
    [note] = [n for n in doc["notes"] if "uncommitted" in n]
    assert "2 file(s)" in note and "a.py" in note and "b.py" in note and "--worktree" in note
    assert doc["coverage"]["reviewed"] == ["a.py"]

    _, doc, _ = review(repo, capsys, "--worktree")  # on main: the uncommitted changes alone
    assert sorted(doc["coverage"]["reviewed"]) == ["a.py", "b.py"]
    assert not [n for n in doc["notes"] if "uncommitted" in n]
    assert doc["findings"] and doc["findings"][0]["path"] == "a.py"
    # the review left HEAD, the index and the files as they were
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "status", "--porcelain") == status
    assert (repo / "a.py").read_text() == "a = 3\n"

    _, doc, _ = review(repo, capsys, "--worktree", "--base", "HEAD~")  # the branch's commits too
    assert sorted(doc["coverage"]["reviewed"]) == ["a.py", "b.py"]


def test_worktree_with_head_is_a_usage_error(make_repo, capsys) -> None:
    repo = make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    code, _, err = review(repo, capsys, "--worktree", "--head", "HEAD")
    assert code == 2 and "--worktree" in one_line_error(err)


def test_an_edited_config_in_the_working_tree_is_said_not_used(make_repo, capsys) -> None:
    repo = make_repo({".prereview.yml": yaml.safe_dump(SCRIPTED), "a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    _, doc, _ = review(repo, capsys, "--base", "HEAD~")
    assert not [n for n in doc["notes"] if ".prereview.yml" in n]  # the same as at base: nothing to say
    (repo / ".prereview.yml").write_text(yaml.safe_dump({**SCRIPTED, "review": {"min_severity": "high"}}))
    _, doc, _ = review(repo, capsys, "--base", "HEAD~")
    [note] = [n for n in doc["notes"] if ".prereview.yml in the working tree" in n]
    assert "not used" in note and "base revision" in note and "--config .prereview.yml" in note
    assert doc["findings"]  # the base revision's config it is: min_severity high was not applied


def test_a_config_link_out_of_the_tree_is_not_followed(make_repo, capsys, tmp_path) -> None:
    secret = tmp_path / "outside.yml"
    secret.write_text("token: do-not-read\n")
    repo = make_repo({".prereview.yml": yaml.safe_dump(SCRIPTED), "a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    (repo / ".prereview.yml").unlink()
    (repo / ".prereview.yml").symlink_to(secret)
    code, doc, err = review(repo, capsys, "--base", "HEAD~")
    assert code == 0 and not [n for n in doc["notes"] if "working tree is not used" in n]
    assert "do-not-read" not in json.dumps(doc) + err
