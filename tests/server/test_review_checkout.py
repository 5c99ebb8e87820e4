"""Server reviews run the CLI's pipeline on a checkout of base and head, not on the diff alone.

The same repository is reviewed by `prereview review` (a subprocess, same config file) and by the server
and worker against the emulated GitHub / GitLab, which fetch it from a local bare repository (the clone
URL the server is configured with): the findings (rule, path, line, fingerprint) must be the same, and
include what needs the checkout (the tests the change breaks, a hard-coded secret). A checkout that fails
is said in the posted review.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bot.jobs import workspace
from bot.render.markdown import fingerprints_in
from bot.types import ChangeRef, ChangeRequest
from tests.conftest import git
from tests.fakes import git_http
from tests.fakes.github_api import FakeGitHub
from tests.fakes.gitlab_api import TOKEN, FakeGitLab
from tests.server.stack import ROOT, Stack, comment_event, payload, wait_for

REPO, PR = "chmouel/scratchmyback", 1
PROJECT, IID = "gitlab-org/gitlab-test", 1
SUMMARY = "prereview:summary"
_RULE = re.compile(r"· (\w+) `([^`]+)`")

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap not installed (apt-get install bubblewrap)"
)

Found = dict[str, tuple[str | None, str, int]]  # fingerprint -> (rule id, path, line)


def _stack(tmp: Path, forge_url: str, extra: dict[str, Any], **kw: Any) -> Stack:
    stack = Stack(tmp, forge_url, extra={"patches": {"enabled": False}, **extra}, **kw)
    stack.env["PREREVIEW_CACHE_DIR"] = str(tmp / "cache-server")
    (tmp / "jobtmp").mkdir()
    stack.env["TMPDIR"] = str(tmp / "jobtmp")  # the worker's checkouts go here, and must not stay
    return stack


def _bare(repo: Path, tmp: Path, name: str) -> None:
    target = tmp / "remotes" / f"{name}.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(target)], check=True)


def cli_findings(stack: Stack, repo: Path, base: str, head: str) -> Found:
    """`prereview review` on the same repository with the server's config file (its own test cache)."""
    env = {**stack.env, "PREREVIEW_CACHE_DIR": str(stack.tmp / "cache-cli")}
    argv = [sys.executable, "-m", "bot", "review", "--repo", str(repo), "--base", base, "--head", head]
    argv += ["--format", "json", "--config", str(stack.config)]
    proc = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    return {f["fingerprint"]: (f["rule_id"], f["path"], f["line"]) for f in data["findings"]}


def posted(inline: list[tuple[str, int, str]], summary: str) -> Found:
    """What the server posted: inline comments (path, line, body) and the summary's hidden fingerprints."""
    out: Found = {}
    for path, line, body in inline:
        # findings on the same lines share a comment: their headings and markers are in the same order
        heads = [ln for ln in body.splitlines() if ln.startswith(("🛑", "🔴", "🟠", "🟡", "🔵"))]
        fps = re.findall(r"<!-- prereview:fp=([0-9a-f]{16}) -->", body)
        for head, fp in zip(heads, fps, strict=False):
            m = _RULE.search(head)
            out[fp] = (m.group(2) if m else None, path, line)
    for fp in fingerprints_in(summary) - set(out):
        out[fp] = ("(summary only)", "", 0)
    return out


def assert_same(server: Found, cli: Found) -> None:
    assert set(server) == set(cli), (server, cli)
    for fp, where in server.items():
        if where[0] != "(summary only)":
            assert where == cli[fp], (fp, where, cli[fp])


def assert_clean(stack: Stack, logs: str) -> None:
    assert "test-token" not in logs and TOKEN not in logs  # the token is never logged
    left = [p for p in (stack.tmp / "jobtmp").rglob("prereview-*") if p.name != "prereview-jobs"]
    assert not left, "the job's checkout was left behind"  # (each worker's own folder may stay)


@needs_bwrap
def test_github_review_flags_the_tests_the_change_breaks_like_the_cli(bench_repo, tmp_path: Path) -> None:
    found = bench_repo("quixbugs", "gcd")
    repo = Path(found["repo"])
    base, head = git(repo, "rev-parse", "HEAD~1").strip(), git(repo, "rev-parse", "HEAD").strip()
    _bare(repo, tmp_path, REPO)
    diff = git(repo, "diff", base, head)
    with FakeGitHub(repo=REPO, pr_number=PR, diff_text=diff, head_sha=head, base_sha=base) as gh:
        stack = _stack(tmp_path, gh.url, {"test_command": found["test_cmd"]})
        cli = cli_findings(stack, repo, base, head)
        assert ("tests/broken", "python_programs/gcd.py") in {(r, p) for r, p, _ in cli.values()}, cli
        try:
            stack.start_server()
            stack.start_worker()
            assert stack.github(comment_event("/review", comment_id=41)).status_code == 202
            wait_for(
                lambda: any(SUMMARY in c["body"] for c in gh.issue_comments),
                300,
                "the summary\n" + stack.logs(),
            )
            logs = stack.logs()
        finally:
            stack.stop()
        summary = next(c["body"] for c in gh.issue_comments if SUMMARY in c["body"])
        inline = [(c["path"], c["line"], c["body"]) for c in gh.comments]
    assert_same(posted(inline, summary), cli)
    assert "No findings." not in summary and "diff alone" not in summary, summary
    assert not gh.schema_errors
    assert_clean(stack, logs)


def test_gitlab_review_flags_a_secret_the_change_adds_like_the_cli(make_repo, tmp_path: Path) -> None:
    repo = make_repo(
        {"app.py": "def add(a, b):\n    return a + b\n"},
        {"settings.py": 'REGION = "eu-west-1"\nAWS_KEY_ID = "AKIAQWERTYUIOP123456"\n'},
    )
    base, head = git(repo, "rev-parse", "HEAD~1").strip(), git(repo, "rev-parse", "HEAD").strip()
    _bare(repo, tmp_path, PROJECT)
    diff = git(repo, "diff", base, head)
    with FakeGitLab(
        project_id=5,
        project_path=PROJECT,
        mr_iid=IID,
        diff_text=diff,
        base_sha=base,
        head_sha=head,
        members={"developer": 30},
    ) as gl:
        stack = _stack(tmp_path, "http://127.0.0.1:9", {"tests": "off"}, gitlab_url=gl.url)
        stack.env["PREREVIEW_GITLAB_TOKEN"] = TOKEN
        cli = cli_findings(stack, repo, base, head)
        assert ("secrets.aws-access-key-id", "settings.py", 2) in cli.values(), cli
        data = payload("note_merge_request.go-gitlab.json", "gitlab")
        nid = gl.add_note("/review", author="developer")["id"]
        data["object_attributes"].update(note="/review", id=nid)
        data["user"].update(username="developer", id=gl.user_id("developer"))
        try:
            stack.start_server()
            stack.start_worker()
            assert stack.gitlab(json.dumps(data).encode()).status_code == 202
            wait_for(lambda: any(SUMMARY in n["body"] for n in gl.notes), 120, "the summary\n" + stack.logs())
            logs = stack.logs()
        finally:
            stack.stop()
        summary = next(n["body"] for n in gl.notes if SUMMARY in n["body"])
        inline = [(n["position"]["new_path"], n["position"]["new_line"], n["body"]) for n in gl.diff_notes]
    assert_same(posted(inline, summary), cli)
    assert "AKIAQWERTYUIOP123456" not in summary + "".join(b for *_, b in inline)  # masked, as in the CLI
    assert workspace.TESTS_OFF in summary  # a stage that did not run says so
    assert not gl.violations
    assert_clean(stack, logs)


CALC = "def double(x):\n    return 2 * x\n\n\ndef triple(x):\n    return 3 * x\n"
CALC_TESTS = (
    "from calc import double, triple\n\n\ndef test_double():\n    assert double(3) == 6\n\n\n"
    "def test_triple():\n    assert triple(3) == 9\n"
)


# The PR's own tests look for the token everywhere they can reach (environment, the tree, /tmp, $HOME);
# the token is assembled at run time so the repository's text never holds it.
LEAK_TEST = """\
import base64, os

SECRET = "test" + "-token"
FORMS = [SECRET, base64.b64encode(("x-access-token:" + SECRET).encode()).decode()]


def test_the_token_is_out_of_reach():
    seen = [k for k, v in os.environ.items() if any(f in v for f in FORMS)]
    for root in {os.getcwd(), "/tmp", os.path.expanduser("~")}:
        for folder, _, names in os.walk(root):
            for name in names:
                try:
                    with open(os.path.join(folder, name), "rb") as fh:
                        data = fh.read(2_000_000)
                except OSError:
                    continue
                seen += [os.path.join(folder, name) for f in FORMS if f.encode() in data]
    assert not seen, seen
"""


@needs_bwrap
@pytest.mark.skipif(not git_http.available(), reason="git-http-backend not found (git --exec-path)")
def test_over_http_the_token_reaches_git_only(make_repo, tmp_path: Path) -> None:
    """The clone URL is smart HTTP requiring the token: git sent it, and the PR's tests, run from the
    checkout in the sandbox, could not find it (their only failure is the one the change makes)."""
    repo = make_repo(
        {"calc.py": CALC, "test_calc.py": CALC_TESTS},
        {"calc.py": CALC.replace("3 * x", "3 + x"), "test_leak.py": LEAK_TEST},
    )
    base, head = git(repo, "rev-parse", "HEAD~1").strip(), git(repo, "rev-parse", "HEAD").strip()
    _bare(repo, tmp_path, REPO)
    diff = git(repo, "diff", base, head)
    with (
        git_http.GitHTTP(tmp_path / "remotes", "x-access-token", "test-token") as remote,
        FakeGitHub(repo=REPO, pr_number=PR, diff_text=diff, head_sha=head, base_sha=base) as gh,
    ):
        extra = {"test_command": "python -m pytest -q -p no:cacheprovider"}
        stack = _stack(tmp_path, gh.url, extra, server={"github_git_url": remote.url})
        try:
            stack.start_server()
            stack.start_worker()
            assert stack.github(comment_event("/review", comment_id=43)).status_code == 202
            wait_for(
                lambda: any(SUMMARY in c["body"] for c in gh.issue_comments),
                300,
                "the summary\n" + stack.logs(),
            )
            logs = stack.logs()
        finally:
            stack.stop()
        summary = next(c["body"] for c in gh.issue_comments if SUMMARY in c["body"])
        bodies = [c["body"] for c in gh.comments]
    assert remote.authorized > 0 and remote.refused == 0  # the checkout went over HTTP, with the header
    timed = re.search(r"fetched base and head in (\d+\.\d\d) s", logs)
    assert timed, logs  # the fetch is timed in the worker's log
    print(f"checkout over smart HTTP: {timed.group(1)} s")
    [broken] = [b for b in bodies if "`tests/broken`" in b]
    assert "test_triple" in broken and "test_the_token_is_out_of_reach" not in broken, broken
    assert "test_the_token_is_out_of_reach" not in summary
    assert_clean(stack, logs)


@needs_bwrap
def test_incremental_review_on_a_checkout_posts_only_what_is_new(make_repo, tmp_path: Path) -> None:
    """`/review` flags the broken test; after a push that adds a secret, `/review -i` flags the secret
    only: the earlier finding is neither posted again nor resolved, and the tests ran on the new head."""
    repo = make_repo(
        {"calc.py": CALC, "test_calc.py": CALC_TESTS}, {"calc.py": CALC.replace("3 * x", "3 + x")}
    )
    base, first = git(repo, "rev-parse", "HEAD~1").strip(), git(repo, "rev-parse", "HEAD").strip()
    (repo / "settings.py").write_text('AWS_KEY_ID = "AKIAQWERTYUIOP123456"\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a push")
    second = git(repo, "rev-parse", "HEAD").strip()
    _bare(repo, tmp_path, REPO)
    with FakeGitHub(
        repo=REPO, pr_number=PR, diff_text=git(repo, "diff", base, first), head_sha=first, base_sha=base
    ) as gh:
        extra = {"test_command": "python -m pytest -q -p no:cacheprovider"}
        stack = _stack(tmp_path, gh.url, extra)
        try:
            stack.start_server()
            stack.start_worker()
            assert stack.github(comment_event("/review", comment_id=45)).status_code == 202
            wait_for(lambda: gh.comments, 120, "the first review\n" + stack.logs())
            gh.set_head(second, git(repo, "diff", base, second))
            assert stack.github(comment_event("/review -i", comment_id=46)).status_code == 202
            wait_for(
                lambda: any("Incremental review" in c["body"] for c in gh.issue_comments),
                120,
                "the incremental summary\n" + stack.logs(),
            )
            logs = stack.logs()
        finally:
            stack.stop()
        posted_ = [(c["path"], _RULE.search(c["body"].splitlines()[0])) for c in gh.comments]
        rules = [(path, m.group(2)) for path, m in posted_ if m]
        resolved = [c for c in gh.comments if "prereview:resolved" in c["body"]]
    assert rules == [("calc.py", "tests/broken"), ("settings.py", "secrets.aws-access-key-id")], rules
    assert not resolved and not gh.schema_errors
    assert_clean(stack, logs)


def test_a_failed_checkout_is_said_in_the_review(tmp_path: Path) -> None:
    """No repository at the clone URL: the review still comes, from the diff, and says what it lacks."""
    diff = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    with FakeGitHub(repo=REPO, pr_number=PR, diff_text=diff, head_sha="a" * 40, base_sha="b" * 40) as gh:
        stack = _stack(tmp_path, gh.url, {})
        try:
            stack.start_server()
            stack.start_worker()
            assert stack.github(comment_event("/review", comment_id=42)).status_code == 202
            wait_for(
                lambda: any(SUMMARY in c["body"] for c in gh.issue_comments),
                60,
                "the summary\n" + stack.logs(),
            )
            logs = stack.logs()
        finally:
            stack.stop()
        summary = next(c["body"] for c in gh.issue_comments if SUMMARY in c["body"])
    assert "Reviewed the diff alone, without the changed files' context, the scanners" in summary, summary
    assert "or the tests: cannot check out the PR (fetch): " in summary
    assert_clean(stack, logs)


def test_a_sandbox_that_cannot_start_is_said_in_the_review(make_repo, tmp_path: Path) -> None:
    """Checked out, but the server's sandbox (docker here, no engine) cannot run the tests: a note."""
    repo = make_repo({"t_test.py": "def test_ok():\n    pass\n"}, {"app.py": "x = 1\n"})
    base, head = git(repo, "rev-parse", "HEAD~1").strip(), git(repo, "rev-parse", "HEAD").strip()
    _bare(repo, tmp_path, REPO)
    diff = git(repo, "diff", base, head)
    with FakeGitHub(repo=REPO, pr_number=PR, diff_text=diff, head_sha=head, base_sha=base) as gh:
        extra = {"test_command": "python -m pytest -q", "sandbox": {"backend": "docker"}}
        stack = _stack(tmp_path, gh.url, extra)
        stack.env["DOCKER_HOST"] = f"unix://{tmp_path}/no-docker.sock"
        try:
            stack.start_server()
            stack.start_worker()
            assert stack.github(comment_event("/review", comment_id=44)).status_code == 202
            wait_for(
                lambda: any(SUMMARY in c["body"] for c in gh.issue_comments),
                60,
                "the summary\n" + stack.logs(),
            )
            logs = stack.logs()
        finally:
            stack.stop()
        summary = next(c["body"] for c in gh.issue_comments if SUMMARY in c["body"])
    assert "tests not run: " in summary and "docker" in summary.lower(), summary
    assert "diff alone" not in summary
    assert_clean(stack, logs)


def test_the_review_runs_from_the_merge_base_when_the_target_moved_on(make_repo) -> None:
    """GitHub names the target branch's tip as the base; the review (as GitHub's diff) is from the
    merge base, so the target's newer commits are not reviewed as if the PR removed them."""
    repo = make_repo({"a.py": "a = 1\n"}, {"b.py": "b = 1\n"})
    head = git(repo, "rev-parse", "HEAD").strip()
    merge_base = git(repo, "rev-parse", "HEAD~1").strip()
    git(repo, "checkout", "-q", "-b", "target", merge_base)
    (repo / "c.py").write_text("c = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "target moves on")
    tip = git(repo, "rev-parse", "HEAD").strip()
    change = ChangeRequest(ChangeRef("github", REPO, number=PR), tip, head, "(the API's diff)")
    local, notes = workspace.on_checkout(change, repo)
    assert (local.base_sha, local.head_sha, local.workdir, notes) == (merge_base, head, repo, ())
    assert local.diff_text == git(repo, "diff", merge_base, head) and "c.py" not in local.diff_text
    unrelated = git(repo, "commit-tree", f"{tip}^{{tree}}", "-m", "no common history").strip()
    local, notes = workspace.on_checkout(ChangeRequest(change.ref, unrelated, head, "api"), repo)
    assert local.workdir == repo and local.diff_text == "api" and "merge base" in notes[0]


def test_an_incremental_review_compares_with_the_last_reviewed_head(make_repo) -> None:
    repo = make_repo({"a.py": "a = 1\n"}, {"a.py": "a = 2\n"})
    base, head = git(repo, "rev-parse", "HEAD~1").strip(), git(repo, "rev-parse", "HEAD").strip()
    change = ChangeRequest(ChangeRef("github", REPO, number=PR), base, head, "diff", workdir=repo)
    assert workspace.since(change, base, "PR") == (
        ChangeRequest(change.ref, base, head, "diff", workdir=repo),
        (),
    )
    local, notes = workspace.since(replace(change, base_sha="0" * 40), head, "PR")
    assert local.base_sha == head and notes == ()
    local, notes = workspace.since(change, "f" * 40, "PR")  # force-pushed away: the base, said
    assert local == change and notes[0].startswith(f"The last reviewed head `{'f' * 12}` is no longer")
    assert workspace.since(replace(change, workdir=None), head, "PR") == (replace(change, workdir=None), ())
