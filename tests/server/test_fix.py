"""`/fix` through the server: clone the PR, run its tests in the sandbox, deliver the verified fix.

As suggestions (default), or (`patches.fix_mode: branch`) pushed to a branch of a local bare repository
(the clone URL the server is configured with) plus a draft PR/MR on the emulated forge.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.server.forge_session import replied_to
from tests.fakes.github_api import FakeGitHub
from tests.fakes.gitlab_api import TOKEN, FakeGitLab
from tests.server.stack import Stack, comment_event, payload, wait_for

REPO, PR = "chmouel/scratchmyback", 1
PROJECT, IID = "gitlab-org/gitlab-test", 1
GCD_FIX = {"faulty": "return gcd(a % b, b)", "fixed": "return gcd(b, a % b)"}
FIXED_LINE = "        return gcd(b, a % b)"

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap not installed (apt-get install bubblewrap)"
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@dataclass
class Case:
    tmp: Path
    repo: Path
    base: str
    head: str
    diff: str
    test_cmd: str
    script: Path

    def remote(self, name: str) -> Path:
        """A bare copy of the PR's repository at the clone URL the server is configured with, with the
        PR's branch `feature` at the head."""
        target = self.tmp / "remotes" / f"{name}.git"
        if not target.exists():
            subprocess.run(["git", "clone", "-q", "--bare", str(self.repo), str(target)], check=True)
            git(target, "update-ref", "refs/heads/feature", self.head)
        return target

    def stack(self, forge_url: str, fix_mode: str, **kw: Any) -> Stack:
        stack = Stack(
            self.tmp,
            forge_url,
            model={"backend": "scripted", "name": "scripted", "script": str(self.script)},
            extra={"test_command": self.test_cmd, "patches": {"agent_steps": 0, "fix_mode": fix_mode}},
            **kw,
        )
        stack.env["PREREVIEW_CACHE_DIR"] = str(self.tmp / "cache")
        return stack


@pytest.fixture
def case(bench_repo, tmp_path: Path) -> Case:
    found = bench_repo("quixbugs", "gcd")
    work = Path(found["repo"])
    base, head = git(work, "rev-parse", "HEAD~1").strip(), git(work, "rev-parse", "HEAD").strip()
    script = tmp_path / "script.json"
    reply = {"match": "Return the fix as JSON", "text": json.dumps(GCD_FIX)}
    script.write_text(json.dumps({"replies": [reply], "default": {"findings": []}}))
    return Case(tmp_path, work, base, head, git(work, "diff", base, head), found["test_cmd"], script)


def github_fix(case: Case, gh: FakeGitHub, fix_mode: str) -> str:
    stack = case.stack(gh.url, fix_mode)
    try:
        stack.start_server()
        stack.start_worker()
        assert stack.github(comment_event("/fix", comment_id=31)).status_code == 202
        wait_for(
            lambda: 31 in replied_to([c["body"] for c in gh.issue_comments]),
            120,
            "the /fix reply\n" + stack.logs(),
        )
        logs = stack.logs()
    finally:
        stack.stop()
    assert "test-token" not in logs  # the token is never logged
    return next(c["body"] for c in gh.issue_comments if 31 in replied_to([c["body"]]))


def _fake_github(case: Case, **kw: Any) -> FakeGitHub:
    return FakeGitHub(
        repo=REPO, pr_number=PR, diff_text=case.diff, head_sha=case.head, base_sha=case.base, **kw
    )


def test_fix_replies_with_a_patch_the_tests_verified(case: Case) -> None:
    case.remote(REPO)
    with _fake_github(case) as gh:
        answer = github_fix(case, gh, "suggest")
    assert "Posted a verified fix as suggestions (tests:" in answer, answer
    [suggestion] = [c for c in gh.comments if "```suggestion" in c["body"]]
    assert suggestion["path"] == "python_programs/gcd.py"
    assert f"```suggestion\n{FIXED_LINE}\n```" in suggestion["body"]
    assert not gh.schema_errors and not gh.pulls_created


def test_branch_mode_pushes_a_branch_and_opens_a_draft_pr(case: Case) -> None:
    remote = case.remote(REPO)
    branch = f"prereview/fix-{PR}-{case.head[:7]}"
    with _fake_github(case, remote=remote) as gh:
        answer = github_fix(case, gh, "branch")
    [pull] = gh.pulls_created
    assert answer.startswith("Opened a draft PR with a verified fix (tests:"), answer
    assert pull["html_url"] in answer
    assert (pull["draft"], pull["head"]["ref"], pull["base"]["ref"]) == (True, branch, "feature")
    tip = git(remote, "rev-parse", f"refs/heads/{branch}").strip()
    assert git(remote, "rev-parse", f"{tip}^").strip() == case.head  # one commit on top of the PR's head
    assert FIXED_LINE in git(remote, "show", f"{tip}:python_programs/gcd.py")
    assert git(remote, "log", "-1", "--format=%an", tip).strip() == "prereview"
    assert git(remote, "diff", "--name-only", case.head, tip).split() == ["python_programs/gcd.py"]
    assert not gh.comments and not gh.schema_errors  # no suggestions: the fix is in the draft PR


def test_branch_mode_on_a_fork_falls_back_to_suggestions(case: Case) -> None:
    remote = case.remote(REPO)
    with _fake_github(case, fork=True, remote=remote) as gh:
        answer = github_fix(case, gh, "branch")
    first, rest = answer.split("\n\n", 1)
    assert first == "The PR's branch is in a fork prereview cannot push to: the fix is below."
    assert rest.startswith("Posted a verified fix as suggestions")
    assert not gh.pulls_created and "prereview/" not in git(remote, "branch", "--list")


def test_branch_mode_never_overwrites_a_branch(case: Case) -> None:
    remote = case.remote(REPO)
    branch = f"prereview/fix-{PR}-{case.head[:7]}"
    theirs = subprocess.run(
        ["git", "-C", str(remote), "commit-tree", f"{case.base}^{{tree}}", "-p", case.head, "-m", "theirs"],
        env={
            "GIT_AUTHOR_NAME": "a",
            "GIT_AUTHOR_EMAIL": "a@x",
            "GIT_COMMITTER_NAME": "a",
            "GIT_COMMITTER_EMAIL": "a@x",
        },
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    git(remote, "update-ref", f"refs/heads/{branch}", theirs)  # someone else's commit on that name
    with _fake_github(case, remote=remote) as gh:
        answer = github_fix(case, gh, "branch")
    assert answer.startswith(f"Could not push `{branch}` (cannot push branch {branch}: "), answer
    assert "Posted a verified fix as suggestions" in answer
    assert git(remote, "rev-parse", f"refs/heads/{branch}").strip() == theirs
    assert not gh.pulls_created


def test_gitlab_branch_mode_opens_a_draft_mr(case: Case) -> None:
    remote = case.remote(PROJECT)
    with FakeGitLab(
        project_id=5,
        project_path=PROJECT,
        mr_iid=IID,
        diff_text=case.diff,
        base_sha=case.base,
        head_sha=case.head,
        members={"developer": 30},
    ) as gl:
        stack = case.stack("http://127.0.0.1:9", "branch", gitlab_url=gl.url)
        stack.env["PREREVIEW_GITLAB_TOKEN"] = TOKEN
        data = payload("note_merge_request.go-gitlab.json", "gitlab")
        nid = gl.add_note("/fix", author="developer")["id"]
        data["object_attributes"].update(note="/fix", id=nid)
        data["user"].update(username="developer", id=gl.user_id("developer"))
        try:
            stack.start_server()
            stack.start_worker()
            assert stack.gitlab(json.dumps(data).encode()).status_code == 202
            wait_for(
                lambda: any(nid in replied_to([n["body"]]) for n in gl.notes),
                120,
                "the /fix reply\n" + stack.logs(),
            )
            logs = stack.logs()
        finally:
            stack.stop()
    answer = next(n["body"] for n in gl.notes if nid in replied_to([n["body"]]))
    [mr] = gl.created_mrs
    branch = f"prereview/fix-{IID}-{case.head[:7]}"
    assert answer.startswith("Opened a draft MR with a verified fix (tests:") and mr["web_url"] in answer
    assert mr["draft"] and mr["title"] == f"Draft: prereview: fix the tests broken in !{IID}"
    assert (mr["source_branch"], mr["target_branch"], mr["force_remove_source_branch"]) == (
        branch,
        "feature",
        True,
    )
    assert FIXED_LINE in git(remote, "show", f"refs/heads/{branch}:python_programs/gcd.py")
    assert not gl.violations and TOKEN not in logs
