"""`prereview gitlab`: review the merge request of a GitLab MR pipeline and publish the review on it.

Reads the predefined CI variables (CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID,
CI_MERGE_REQUEST_DIFF_BASE_SHA, CI_COMMIT_SHA, CI_PROJECT_DIR, CI_PIPELINE_SOURCE). The job's checkout
drives the review (the local git diff base..head); the Code Quality report is always written; notes
and discussions need PREREVIEW_GITLAB_TOKEN (or GITLAB_TOKEN), because CI_JOB_TOKEN cannot post them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from ..types import PrereviewError
from .ci_env import sandbox_off, trust_checkout
from .options import config_options

TOKEN_VARS = ("PREREVIEW_GITLAB_TOKEN", "GITLAB_TOKEN")
NOT_POSTING = (
    "PREREVIEW_GITLAB_TOKEN is not set (nor GITLAB_TOKEN), so nothing is posted on the merge request "
    "(CI_JOB_TOKEN cannot post notes): wrote the Code Quality report only; add a project access token "
    "(api scope, Developer role) as a masked CI/CD variable PREREVIEW_GITLAB_TOKEN"
)


@dataclass(frozen=True)
class Pipeline:
    """The merge request a pipeline runs for, from GitLab's predefined variables."""

    api_url: str
    project: str
    mr_iid: int
    base_sha: str | None
    head_sha: str
    project_dir: Path
    title: str = ""
    description: str = ""
    author: str = ""
    labels: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, mr_iid: int | None = None) -> Pipeline:
        source = env.get("CI_PIPELINE_SOURCE", "")
        iid = mr_iid or _int(env.get("CI_MERGE_REQUEST_IID"))
        if iid is None:
            raise PrereviewError(
                f"not a merge request pipeline (CI_PIPELINE_SOURCE is '{source or 'unset'}', "
                "no CI_MERGE_REQUEST_IID); run the job with "
                '`rules: - if: $CI_PIPELINE_SOURCE == "merge_request_event"` or pass --mr IID'
            )
        api = env.get("CI_API_V4_URL") or (
            env["CI_SERVER_URL"].rstrip("/") + "/api/v4" if env.get("CI_SERVER_URL") else ""
        )
        if not api:
            raise PrereviewError(
                "CI_API_V4_URL is not set; run in GitLab CI or set it to https://HOST/api/v4"
            )
        project = env.get("CI_MERGE_REQUEST_PROJECT_ID") or env.get("CI_PROJECT_ID")
        if not project:
            raise PrereviewError("CI_PROJECT_ID is not set; run in GitLab CI or set it to the project id")
        # Merged-results pipelines run on a merge commit; the MR's own head is the source branch sha.
        head = env.get("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA") or env.get("CI_COMMIT_SHA")
        if not head:
            raise PrereviewError("CI_COMMIT_SHA is not set; run in GitLab CI or set it to the head commit")
        return cls(
            api_url=api,
            project=project,
            mr_iid=iid,
            base_sha=env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA") or None,
            head_sha=head,
            project_dir=Path(env.get("CI_PROJECT_DIR") or "."),
            title=env.get("CI_MERGE_REQUEST_TITLE", ""),
            description=env.get("CI_MERGE_REQUEST_DESCRIPTION", ""),
            author=env.get("GITLAB_USER_LOGIN", ""),  # who started the pipeline (a bot that pushed)
            labels=tuple(x.strip() for x in env.get("CI_MERGE_REQUEST_LABELS", "").split(",") if x.strip()),
        )


def _int(text: str | None) -> int | None:
    return int(text) if text and text.strip().isdigit() else None


def token_from(env: Mapping[str, str]) -> str | None:
    return next((env[v].strip() for v in TOKEN_VARS if env.get(v, "").strip()), None)


def ssl_verify_from(env: Mapping[str, str]) -> bool | str:
    """A self-managed instance's CA: CI_SERVER_TLS_CA_FILE (set by the runner) or REQUESTS_CA_BUNDLE."""
    for var in ("CI_SERVER_TLS_CA_FILE", "REQUESTS_CA_BUNDLE"):
        path = env.get(var, "").strip()
        if path:
            if not Path(path).is_file():
                raise PrereviewError(
                    f"{var} points at {path}, which does not exist; fix the path or unset it"
                )
            return path
    return True


class _Echo:
    """Plain lines for CI logs (no spinners)."""

    def message(self, text: str) -> None:
        click.echo(f"prereview: {text}", err=True)

    def step(self, done: int, total: int, label: str) -> None:
        click.echo(f"prereview: [{done}/{total}] {label}", err=True)


@click.command("gitlab")
@click.option("--mr", "mr_iid", type=int, help="Merge request iid (default: $CI_MERGE_REQUEST_IID).")
@click.option(
    "--codequality",
    "codequality_path",
    type=click.Path(path_type=Path),
    help="Code Quality report path (default: gitlab.codequality_path, gl-code-quality-report.json).",
)
@config_options("Config file (default: .prereview.yml at the MR's base revision).")
@click.option("--no-post", is_flag=True, help="Write the Code Quality report only; post nothing.")
@click.option("--force", is_flag=True, help="Review even when review.ignore (author, label, title) matches.")
def command(
    mr_iid: int | None,
    codequality_path: Path | None,
    config_file: Path | None,
    overrides: dict[str, Any],
    no_post: bool,
    force: bool,
) -> None:
    """Review the merge request of a GitLab MR pipeline and post the review on it."""
    sys.exit(
        run(
            os.environ,
            mr_iid=mr_iid,
            codequality_path=codequality_path,
            config_file=config_file,
            overrides=overrides,
            post=not no_post,
            force=force,
        )
    )


def run(
    env: Mapping[str, str],
    *,
    mr_iid: int | None = None,
    codequality_path: Path | None = None,
    config_file: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    post: bool = True,
    force: bool = False,
) -> int:
    from ..change import git
    from ..forges.base import PermissionDenied
    from ..forges.gitlab.forge import GitLabForge
    from ..pipeline.run import exit_code, load_config, review_change
    from ..publish.gitlab import publish
    from ..render.codequality import render_codequality
    from ..review_filters import skip_message, skip_reason
    from ..types import ChangeRef, ChangeRequest

    p = Pipeline.from_env(env, mr_iid=mr_iid)
    progress = _Echo()
    token = token_from(env)

    def forge(timeout: float = 30.0, retries: int = 4) -> GitLabForge:  # built when needed: no I/O before
        return GitLabForge(
            p.api_url, token, p.project, ssl_verify=ssl_verify_from(env), timeout=timeout, retries=retries
        )

    base = p.base_sha
    if base is None:  # very old GitLab, or a manual run: ask the API
        if token is None:
            raise PrereviewError(
                "CI_MERGE_REQUEST_DIFF_BASE_SHA is not set and there is no token to ask GitLab; "
                "set PREREVIEW_GITLAB_TOKEN"
            )
        base = forge().diff_refs(p.mr_iid, p.head_sha).base_sha
    if trusted := trust_checkout(p.project_dir):
        progress.message(trusted)
    workdir = git.toplevel(p.project_dir)
    ref = ChangeRef("gitlab", p.project, base, p.head_sha, p.mr_iid)
    change = ChangeRequest(
        ref=ref,
        base_sha=base,
        head_sha=p.head_sha,
        diff_text="",
        title=p.title,
        body=p.description,
        author=p.author,
        workdir=workdir,
        labels=p.labels,
    )
    GitLabForge.checkout(change, workdir, progress)
    change = replace(change, diff_text=git.diff(workdir, base, p.head_sha))
    cfg = load_config(workdir, base, config_file=config_file, overrides=overrides, env=env)
    cfg, sandbox_note = sandbox_off(cfg, env)
    report = codequality_path or Path(cfg.gitlab.codequality_path)
    report = report if report.is_absolute() else p.project_dir / report
    if not force and (why := skip_reason(change, cfg.review)):
        report.write_text("[]\n", encoding="utf-8")  # the job's report artifact still exists, empty
        progress.message(f"!{p.mr_iid}: {skip_message(why, 'run `prereview gitlab --force`')}")
        return 0
    if not change.diff_text.strip():
        progress.message(f"nothing to review: {base[:12]}..{p.head_sha[:12]} has no changes")
    review = review_change(change, cfg, progress=progress)
    if sandbox_note:
        review = replace(review, notes=(*review.notes, sandbox_note))
    report.write_text(render_codequality(review), encoding="utf-8")
    click.echo(
        f"prereview: {len(review.findings)} finding(s); wrote the Code Quality report to {report}", err=True
    )

    if not post:
        click.echo("prereview: --no-post: nothing posted on the merge request", err=True)
    elif token is None:
        click.echo(f"prereview: {NOT_POSTING}", err=True)
    else:
        try:
            api = forge(cfg.gitlab.timeout, cfg.gitlab.retries)
            res = publish(api, change, review, cfg.gitlab, progress=progress, review_cfg=cfg.review)
        except PermissionDenied as exc:
            if cfg.gitlab.fail_on_permission:
                raise
            click.echo(f"prereview: could not post on !{p.mr_iid}: {exc}", err=True)
        else:
            click.echo(f"prereview: !{p.mr_iid}: {res.line()}", err=True)
    return exit_code(review, cfg.review.fail_level)
