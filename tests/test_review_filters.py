"""Noise controls: review.ignore (author, label, title) for every entry point, filter_mode and the
per-file cap of inline comments for both publishers."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from bot.change.diff import parse
from bot.config import Config, GitLabConfig, ReviewConfig
from bot.forges.github.api import GitHubAPI
from bot.forges.gitlab.forge import GitLabForge
from bot.jobs.job import Job
from bot.pipeline.run import LazyModel
from bot.progress import Quiet
from bot.publish.github import GitHubPublisher
from bot.publish.gitlab import publish as gitlab_publish
from bot.review_filters import placement, plan_inline, skip_reason
from bot.server.forge_session import GitHubSession
from bot.server.queue import make_storage
from bot.server.secrets import Secrets
from bot.server.state import ServerState
from bot.server.worker import ForgeRunner
from bot.types import ChangeRef, ChangeRequest, Coverage, Finding, Review, Stats
from tests.fakes.github_api import FakeGitHub
from tests.fakes.gitlab_api import TOKEN, FakeGitLab

HEAD, BASE = "a" * 40, "b" * 40
# app.py: line 2 is context, line 3 added, line 4 context; line 40 exists in the file but not in the diff
DIFF = (
    "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n"
    "@@ -1,3 +1,4 @@\n a = 1\n b = 2\n+c = 3\n d = 4\n"
)


def _change(**kw: object) -> ChangeRequest:
    return ChangeRequest(ChangeRef("github", "o/r", number=1), BASE, HEAD, DIFF, **kw)  # type: ignore[arg-type]


def _f(line: int, **kw: object) -> Finding:
    return Finding("app.py", line, f"problem {line}", in_diff=line <= 4, **kw)  # type: ignore[arg-type]


def _review(*findings: Finding) -> Review:
    return Review(BASE, HEAD, findings, Stats(model="scripted"), Coverage(reviewed=("app.py",)))


# -- review.ignore ------------------------------------------------------------------------------------
def test_default_ignores_dependency_bots_drafts_and_the_skip_label() -> None:
    cfg = ReviewConfig()
    assert "dependabot[bot]" in (skip_reason(_change(author="dependabot[bot]"), cfg) or "")
    assert skip_reason(_change(author="Renovate[bot]"), cfg) is not None  # case-insensitive
    assert skip_reason(_change(author="alice"), cfg) is None
    assert skip_reason(_change(author="copilot-swe-agent[bot]"), cfg) is None  # agents' PRs are reviewed
    for title in ("WIP: half done", "wip add x", "[WIP] x", "[skip review] bump", "Draft: x", "draft:x"):
        assert skip_reason(_change(title=title), cfg) is not None, title
    for title in ("Wipe the cache", "Drafting rules", "Fix WIP handling"):
        assert skip_reason(_change(title=title), cfg) is None, title
    assert "label 'skip-review'" in (skip_reason(_change(labels=("bug", "skip-review")), cfg) or "")


def test_ignore_globs_treat_brackets_literally() -> None:
    cfg = ReviewConfig.model_validate({"ignore": {"authors": ["*[bot]"], "labels": ["deps/*"]}})
    assert skip_reason(_change(author="github-actions[bot]"), cfg) is not None
    assert skip_reason(_change(author="robot"), cfg) is None  # not a character class [b, o, t]
    assert skip_reason(_change(labels=("deps/python",)), cfg) is not None
    none = ReviewConfig.model_validate({"ignore": {"authors": [], "labels": [], "title_prefixes": []}})
    assert skip_reason(_change(author="dependabot[bot]", title="WIP", labels=("skip-review",)), none) is None


# -- filter_mode and the per-file cap ------------------------------------------------------------------
def test_placement_per_filter_mode() -> None:
    diff = parse(DIFF)
    context, added, outside = _f(2), _f(3), _f(40)
    assert [placement(f, diff, "added") for f in (context, added, outside)] == ["summary", "line", "summary"]
    assert [placement(f, diff, "diff_context") for f in (context, added, outside)] == [
        "line",
        "line",
        "summary",
    ]
    assert [placement(f, diff, "file") for f in (context, added, outside)] == ["line", "line", "file"]
    assert placement(Finding("other.py", 1, "m", in_diff=False), diff, "file") == "summary"


def test_per_file_cap_keeps_the_first_ranked() -> None:
    cfg = ReviewConfig(max_comments_per_file=1)
    plan = plan_inline([_f(3), _f(2), _f(4)], parse(DIFF), cfg)
    assert list(plan.values()) == ["line", "summary", "summary"]


def _api(gh: FakeGitHub) -> GitHubAPI:
    return GitHubAPI(gh.url, "ghs_test", gh.repo, sleep=lambda s: None, write_interval=0)


def test_github_publisher_honours_filter_mode_and_the_cap() -> None:
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh:
        added_only = GitHubPublisher(_api(gh), 1, review_cfg=ReviewConfig(filter_mode="added"))
        res = added_only.publish(_review(_f(3), _f(2)), parse(DIFF))
        assert [c["line"] for c in gh.comments] == [3] and res.in_summary == 1
        assert "`app.py:2`" in gh.issue_comments[0]["body"]
        assert gh.schema_errors == []
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh:
        capped = GitHubPublisher(_api(gh), 1, review_cfg=ReviewConfig(max_comments_per_file=1))
        res = capped.publish(_review(_f(3), _f(2)), parse(DIFF))
        assert (res.posted, res.in_summary) == (1, 1) and len(gh.comments) == 1


def test_github_file_mode_posts_a_file_comment_for_a_line_outside_the_hunks() -> None:
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh:
        pub = GitHubPublisher(_api(gh), 1, review_cfg=ReviewConfig(filter_mode="file"))
        res = pub.publish(_review(_f(3), _f(40)), parse(DIFF))
        assert res.posted == 2 and res.in_summary == 0
        by_kind = {c["subject_type"]: c for c in gh.comments}
        assert by_kind["line"]["line"] == 3
        assert (
            by_kind["file"]["path"] == "app.py"
            and "**line 40** (outside the diff)" in by_kind["file"]["body"]
        )
        assert gh.schema_errors == []
        # a re-run finds both by their fingerprints: nothing new
        again = pub.publish(_review(_f(3), _f(40)), parse(DIFF))
        assert again.posted == 0 and again.skipped == 2 and len(gh.comments) == 2
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE) as gh:  # the default: summary only
        res = GitHubPublisher(_api(gh), 1).publish(_review(_f(3), _f(40)), parse(DIFF))
        assert res.posted == 1 and res.in_summary == 1


def test_gitlab_file_mode_and_added_mode(make_repo) -> None:  # type: ignore[no-untyped-def]
    base_text = "".join(f"line {i}\n" for i in range(1, 31))
    repo = make_repo({"app.py": base_text}, {"app.py": base_text.replace("line 3\n", "line 3 changed\n")})
    from tests.gitlab.conftest import mr_diff, rev

    base, head = rev(repo, "HEAD~1"), rev(repo)
    diff_text = mr_diff(repo, base, head)
    change = ChangeRequest(ChangeRef("gitlab", "42", base, head, 7), base, head, diff_text, workdir=repo)
    context = Finding("app.py", 2, "on a context line", quote="line 2")
    outside = Finding("app.py", 20, "far away", quote="line 20", in_diff=False)
    review = Review(base, head, (context, outside), Stats(model="scripted"), Coverage(reviewed=("app.py",)))
    with FakeGitLab(diff_text=diff_text, base_sha=base, head_sha=head) as gl:
        forge = GitLabForge(gl.url, TOKEN, gl.project_id, sleep=lambda s: None)
        res = gitlab_publish(
            forge, change, review, GitLabConfig(), review_cfg=ReviewConfig(filter_mode="file")
        )
        assert (res.comments, res.file_comments, res.in_summary) == (1, 1, 0)
        file_note = next(n for n in gl.diff_notes if n["position"]["position_type"] == "file")
        assert "**line 20** (outside the diff)" in file_note["body"]
        assert gl.violations == []
    with FakeGitLab(diff_text=diff_text, base_sha=base, head_sha=head) as gl:
        forge = GitLabForge(gl.url, TOKEN, gl.project_id, sleep=lambda s: None)
        res = gitlab_publish(
            forge, change, review, GitLabConfig(), review_cfg=ReviewConfig(filter_mode="added")
        )
        assert (res.comments, res.file_comments, res.in_summary) == (0, 0, 2) and gl.diff_notes == []


class _Session(GitHubSession):
    """The real GitHub session against the emulated API; the base's config read from a dict."""

    repo_config: dict = {}

    def base_file(self, sha: str, path: str, dest: Path) -> str | None:
        return json.dumps(self.repo_config)


def test_server_worker_skips_an_ignored_auto_review(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [], "default": {"findings": []}}))
    cfg = Config.model_validate(
        {
            "model": {"backend": "scripted", "name": "scripted", "script": str(script)},
            "tests": "off",
            "sandbox": {"backend": "none"},
        }
    )
    with FakeGitHub(diff_text=DIFF, head_sha=HEAD, base_sha=BASE, author="dependabot[bot]") as gh:
        cfg = cfg.model_copy(update={"server": cfg.server.model_copy(update={"github_api_url": gh.url})})
        state = ServerState(
            make_storage(cfg.server.model_copy(update={"queue_path": str(tmp_path / "q")}), "s")
        )
        runner = ForgeRunner(
            cfg, Secrets(github_token="ghs_test"), state, model=LazyModel(cfg, Quiet()), sessions=_Session
        )
        with caplog.at_level(logging.INFO, logger="prereview.worker"):
            assert runner.run(Job("review", "github", "o/r", 1, auto=True)) is None
        assert gh.reviews == [] and gh.issue_comments == []
        assert "review skipped: author dependabot[bot]" in caplog.text
        runner.run(Job("review", "github", "o/r", 1))  # `/review` by a person: reviewed
        assert any("prereview:summary" in c["body"] for c in gh.issue_comments)
