"""A repository's `.prereview.yml` (at the PR's base) on the server: honoured, except server-only keys."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import pytest
import yaml

from bot.change import checkout
from bot.config import Config
from bot.jobs import repo_config
from bot.types import PrereviewError
from tests.conftest import git
from tests.fakes.github_api import FakeGitHub
from tests.server.stack import Stack, comment_event, wait_for

HOSTILE = {
    "sandbox": {"backend": "none"},
    "server": {"github_api_url": "http://evil.invalid/api/v3", "bot_logins": []},
    "model": {"api_base": "http://evil.invalid/v1", "api_key_env": "PREREVIEW_GITHUB_TOKEN"},
    "scanners": {"semgrep": "/tmp/evil", "bandit": False, "patterns": False},
    "github": {"allow_tests_on_pull_request_target": True, "max_comments_per_request": 5},
    "review": {"min_severity": "high", "exclude": ["docs/*"]},
    "patches": {"candidates": 50, "agent_steps": 2, "fix_mode": "branch"},
    "test_command": "make test",
}


def test_server_only_keys_are_ignored_with_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    server = Config.model_validate({"sandbox": {"backend": "bubblewrap"}, "model": {"name": "m.gguf"}})
    with caplog.at_level(logging.WARNING, logger="prereview.config"):
        cfg = repo_config.merged(server, HOSTILE, ".prereview.yml (at base abc)")
    assert cfg.sandbox.backend == "bubblewrap"
    assert cfg.server == server.server and cfg.model == server.model
    assert cfg.scanners.semgrep == "semgrep" and not cfg.github.allow_tests_on_pull_request_target
    # everything else is the repository's, as with the CLI
    assert (cfg.review.min_severity, cfg.review.exclude) == ("high", ["docs/*"])
    assert (cfg.scanners.bandit, cfg.scanners.patterns, cfg.scanners.secrets) == (False, False, True)
    assert cfg.github.max_comments_per_request == 5
    assert (cfg.patches.agent_steps, cfg.patches.fix_mode, cfg.test_command) == (2, "branch", "make test")
    assert cfg.patches.candidates == server.patches.candidates  # a budget may be lowered, not raised
    logged = caplog.text
    for key in ("sandbox.backend", "server.github_api_url", "model.api_base", "model.api_key_env"):
        assert f"ignored '{key}'" in logged
    assert "'patches.candidates' capped" in logged
    assert "evil" not in logged  # key names only, never the values (a value may be a secret)


def test_tests_off_on_either_side_wins() -> None:
    assert repo_config.merged(Config(tests="off"), {"tests": "auto"}, "x").tests == "off"
    assert repo_config.merged(Config(), {"tests": False}, "x").tests == "off"  # YAML `tests: off`


def test_a_broken_repo_config_is_one_line_and_an_unreachable_repo_falls_back() -> None:
    with pytest.raises(PrereviewError, match=r"unknown key 'review.severity'"):
        repo_config.merged(Config(), {"review": {"severity": "high"}}, ".prereview.yml")
    cli_only = {"model": {"n_ctx": "lots"}, "sandbox": {"backend": "chroot"}, "review": {"max_findings": 3}}
    assert repo_config.merged(Config(), cli_only, ".prereview.yml").review.max_findings == 3  # ignored anyway

    def unreachable() -> str | None:
        raise PrereviewError("cannot read .prereview.yml at 0123456789ab: repository not found")

    server = Config()
    cfg, notes = repo_config.load(server, unreachable, "0123456789abcdef")
    assert cfg is server and "used the server's config" in notes[0]
    cfg, notes = repo_config.load(server, lambda: None, "0123456789abcdef")
    assert cfg is server and notes == ()
    cfg, notes = repo_config.load(server, lambda: yaml.safe_dump(HOSTILE), "0123456789abcdef")
    assert cfg.review.min_severity == "high" and "`sandbox.backend`" in notes[0]


def _bare_remote(repo: Path, remotes: Path, name: str) -> Path:
    target = remotes / f"{name}.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(target)], check=True)
    return target


def test_read_file_fetches_one_commit_without_its_blobs(make_repo, tmp_path: Path) -> None:
    repo = make_repo({".prereview.yml": "review: {min_severity: high}\n", "big.bin": "x" * 100_000}, {})
    base = git(repo, "rev-parse", "HEAD~1").strip()
    remote = _bare_remote(repo, tmp_path / "remotes", "o/r")
    subprocess.run(["git", "-C", str(remote), "config", "uploadpack.allowFilter", "true"], check=True)
    dest = tmp_path / "cfg"
    text = checkout.read_file(f"file://{remote}", base, ".prereview.yml", dest, user="u", token=None)
    assert text == "review: {min_severity: high}\n"
    assert (
        checkout.read_file(f"file://{remote}", base, "nope.yml", tmp_path / "c2", user="u", token=None)
        is None
    )
    blob = git(repo, "rev-parse", f"{base}:big.bin").strip()
    listed = git(dest, "rev-list", "--objects", "--missing=print", base)
    assert f"?{blob}" in listed.split()  # the other file's blob was never downloaded
    with pytest.raises(PrereviewError, match=r"cannot read .prereview.yml at "):
        checkout.read_file(
            f"file://{tmp_path}/absent.git", base, ".prereview.yml", tmp_path / "c3", user="u", token=None
        )


def test_git_over_https_keeps_the_token_out_of_argv_and_urls(monkeypatch, tmp_path: Path) -> None:
    token = "ghs_s3cr3tTOKENvalue"
    calls: list[tuple[list[str], dict[str, str]]] = []

    class Done:
        returncode, stdout, stderr = 0, "", ""

    def fake_run(argv, env=None, **kw):  # type: ignore[no-untyped-def]
        calls.append((list(argv), dict(env or {})))
        return Done()

    monkeypatch.setattr(checkout.subprocess, "run", fake_run)
    url = "https://github.example/o/r.git"
    checkout.checkout(url, ["a" * 40, "b" * 40], tmp_path / "w", user="x-access-token", token=token)
    checkout.read_file(url, "a" * 40, ".prereview.yml", tmp_path / "c", user="x-access-token", token=token)
    checkout.push(
        tmp_path / "w", url, "c" * 40, "prereview/fix-1-aaaaaaa", user="x-access-token", token=token
    )
    assert any(argv[3:4] == ["push"] for argv, _ in calls)
    for argv, env in calls:
        assert not any(token in a for a in argv), argv
        assert env["GIT_CONFIG_KEY_0"] == "http.extraHeader" and env["GIT_TERMINAL_PROMPT"] == "0"
        assert token not in env["GIT_CONFIG_VALUE_0"]  # base64 in a header, not the raw token in a URL


BASE_CONFIG = {
    "review": {"min_severity": "high"},
    "scanners": {"bandit": False, "patterns": False, "secrets": False},
    "sandbox": {"backend": "none"},
    "server": {"github_api_url": "http://evil.invalid/api/v3"},
}


def test_review_job_honours_the_repo_config_and_ignores_server_only_keys(make_repo, tmp_path: Path) -> None:
    """The same change the GitHub flow test reviews (one inline comment there) gets none here: the
    repository raised min_severity and turned scanners off; its sandbox/API keys changed nothing."""
    repo = make_repo(
        {".prereview.yml": yaml.safe_dump(BASE_CONFIG), "app.py": "def f(x):\n    return x\n"},
        {"app.py": "def f(x):\n    y = eval(x)\n    return y\n"},
    )
    base, head = git(repo, "rev-parse", "HEAD~1").strip(), git(repo, "rev-parse", "HEAD").strip()
    remotes = tmp_path / "stack" / "remotes"
    _bare_remote(repo, remotes, "chmouel/scratchmyback")
    diff = git(repo, "diff", base, head)
    with FakeGitHub(
        repo="chmouel/scratchmyback", pr_number=1, diff_text=diff, head_sha=head, base_sha=base
    ) as gh:
        (tmp_path / "stack").mkdir(exist_ok=True)
        stack = Stack(tmp_path / "stack", gh.url)
        try:
            stack.start_server()
            stack.start_worker()
            assert stack.github(comment_event("/review", comment_id=77)).status_code == 202
            wait_for(
                lambda: any("prereview:summary" in c["body"] for c in gh.issue_comments),
                60,
                "the summary\n" + stack.logs(),
            )
            logs = stack.logs()
        finally:
            stack.stop()
    assert gh.comments == [] and not gh.schema_errors
    summary = next(c["body"] for c in gh.issue_comments if "prereview:summary" in c["body"])
    assert "`sandbox.backend`, `server.github_api_url`" in summary and "only the server's config" in summary
    assert "ignored 'sandbox.backend'" in logs and "ignored 'server.github_api_url'" in logs
    assert "evil.invalid" not in logs


def test_ask_context_leaves_out_what_the_review_config_excludes() -> None:
    from bot.config import ReviewConfig
    from bot.jobs.ask import ask_messages
    from bot.types import ChangeRef, ChangeRequest

    def added(path: str) -> str:
        return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-old\n+new\n"

    gone = (
        "diff --git a/old.py b/old.py\ndeleted file mode 100644\n"
        "--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    )
    diff = added("app.py") + added("docs/guide.md") + added("poetry.lock") + gone
    change = ChangeRequest(ChangeRef("github", "o/r", number=1), "b" * 40, "a" * 40, diff, "t", "")
    [_, user] = ask_messages(change, "why?", budget=4000, count=len, review=ReviewConfig(exclude=["docs/*"]))
    text = user.content
    assert "--- docs/guide.md (omitted: matches review.exclude)" in text
    assert "--- poetry.lock (omitted: lock file)" in text
    assert "--- app.py\n" in text and "--- old.py\n" in text  # a deleted file is still shown


def test_a_repository_cannot_name_an_interpreter_the_server_runs_on_its_host(caplog) -> None:
    """tests.python is run on the host to probe it: only the server's own config may set it."""
    hostile = {"tests": {"python": "/tmp/evil/bin/python", "wheels_only": False, "budget_seconds": 99999}}
    server = Config.model_validate({"tests": {"wheels_only": True}})
    with caplog.at_level(logging.WARNING, logger="prereview.config"):
        cfg = repo_config.merged(server, hostile, ".prereview.yml")
    assert cfg.tests.python is None and cfg.tests.wheels_only is True
    assert cfg.tests.budget_seconds == server.tests.budget_seconds
    assert "ignored 'tests.python'" in caplog.text and "'tests.budget_seconds' capped" in caplog.text
