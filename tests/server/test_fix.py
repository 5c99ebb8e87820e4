"""`/fix` through the server: clone the PR, run its tests in the sandbox, post the verified fix."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from bot.server.forge_session import replied_to
from tests.fakes.github_api import FakeGitHub
from tests.server.stack import Stack, comment_event, wait_for

REPO, PR = "chmouel/scratchmyback", 1
GCD_FIX = {"faulty": "return gcd(a % b, b)", "fixed": "return gcd(b, a % b)"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap not installed (apt-get install bubblewrap)"
)
def test_fix_replies_with_a_patch_the_tests_verified(bench_repo, tmp_path: Path) -> None:
    case = bench_repo("quixbugs", "gcd")
    repo = Path(case["repo"])
    base, head = git(repo, "rev-parse", "HEAD~1").strip(), git(repo, "rev-parse", "HEAD").strip()
    remotes = tmp_path / "remotes"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(remotes / f"{REPO}.git")], check=True)
    script = tmp_path / "script.json"
    reply = {"match": "Return the fix as JSON", "text": json.dumps(GCD_FIX)}
    script.write_text(json.dumps({"replies": [reply], "default": {"findings": []}}))
    diff = git(repo, "diff", base, head)
    with FakeGitHub(repo=REPO, pr_number=PR, diff_text=diff, head_sha=head, base_sha=base) as gh:
        stack = Stack(
            tmp_path,
            gh.url,
            server={"github_git_url": f"file://{remotes}"},
            model={"backend": "scripted", "name": "scripted", "script": str(script)},
            extra={"test_command": case["test_cmd"], "patches": {"agent_steps": 0}},
        )
        stack.env["PREREVIEW_CACHE_DIR"] = str(tmp_path / "cache")
        try:
            stack.start_server()
            stack.start_worker()
            assert stack.github(comment_event("/fix", comment_id=31)).status_code == 202
            wait_for(
                lambda: 31 in replied_to([c["body"] for c in gh.issue_comments]),
                120,
                "the /fix reply\n" + stack.logs(),
            )
        finally:
            stack.stop()
    answer = next(c["body"] for c in gh.issue_comments if 31 in replied_to([c["body"]]))
    assert "Posted a verified fix as suggestions (tests:" in answer, answer
    [suggestion] = [c for c in gh.comments if "```suggestion" in c["body"]]
    assert suggestion["path"] == "python_programs/gcd.py"
    assert "```suggestion\n        return gcd(b, a % b)\n```" in suggestion["body"]
    assert not gh.schema_errors
