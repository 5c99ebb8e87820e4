"""`prereview bitbucket`: review a Bitbucket Data Center pull request from a CI job and publish it.

Everything Bitbucket-specific is in `bot/forges/bitbucket/` (the CI environment: `ci.py`); this is the
entry point: review, `publish/flow.py` over `BitbucketForge`, then the Code Insights report.

The job's checkout drives the review (the local git diff merge-base..head, as for the other forges);
the API gives the pull request's commits and metadata and takes the comments and the Code Insights
report. Environment: see `ci.py`; PREREVIEW_BITBUCKET_USER (the token's user slug) only if Bitbucket
sends no X-AUSERNAME header; PREREVIEW_BITBUCKET_MAX_COMMENTS (default 30) and
PREREVIEW_BITBUCKET_INSIGHTS=false (no Code Insights report).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from .options import config_options

NOT_POSTING = (
    "no token (PREREVIEW_BITBUCKET_TOKEN), so nothing is posted; bind an HTTP access token from a "
    "Jenkins credential to PREREVIEW_BITBUCKET_TOKEN (see examples/Jenkinsfile.bitbucket)"
)


class _Echo:
    def message(self, text: str) -> None:
        click.echo(f"prereview: {text}", err=True)

    def step(self, done: int, total: int, label: str) -> None:
        click.echo(f"prereview: [{done}/{total}] {label}", err=True)


@click.command("bitbucket")
@click.option("--pr", "pr_number", type=int, help="Review this pull request (default: the CI's CHANGE_ID).")
@config_options("Config file (default: .prereview.yml at the PR's base revision).")
@click.option("--no-post", is_flag=True, help="Review only; post nothing on the pull request.")
@click.option("--force", is_flag=True, help="Review even when review.ignore (author, label, title) matches.")
def command(
    pr_number: int | None, config_file: Path | None, overrides: dict[str, Any], no_post: bool, force: bool
) -> None:
    """Review a Bitbucket Data Center pull request from CI (Jenkins) and post the review on it."""
    sys.exit(
        run(
            os.environ,
            pr=pr_number,
            config_file=config_file,
            overrides=overrides,
            post=not no_post,
            force=force,
        )
    )


def max_comments(env: Mapping[str, str]) -> int:
    raw = env.get("PREREVIEW_BITBUCKET_MAX_COMMENTS", "").strip()
    return int(raw) if raw.isdigit() else 30


def insights_on(env: Mapping[str, str]) -> bool:
    return env.get("PREREVIEW_BITBUCKET_INSIGHTS", "true").strip().lower() not in ("0", "false", "no", "off")


def run(
    env: Mapping[str, str],
    *,
    pr: int | None = None,
    config_file: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    post: bool = True,
    force: bool = False,
) -> int:
    from ..change import git
    from ..forges.base import PermissionDenied
    from ..forges.bitbucket import ci
    from ..forges.bitbucket.api import BitbucketApi
    from ..forges.bitbucket.checkout import ensure_commits
    from ..forges.bitbucket.forge import BitbucketForge
    from ..pipeline.run import exit_code, load_config, review_change
    from ..publish import flow
    from ..review_filters import skip_message, skip_reason
    from ..types import ChangeRef, ChangeRequest
    from .ci_env import sandbox_off, trust_checkout

    job = ci.from_env(env, pr=pr)
    progress = _Echo()
    if isinstance(job, str):
        progress.message(job)
        return 0
    token = ci.token_from(env)
    api = BitbucketApi(job.server_url, token, job.repo, user=env.get("PREREVIEW_BITBUCKET_USER"))
    pull = api.pull(job.number)
    head = str((pull.get("fromRef") or {}).get("latestCommit") or "")
    target = str((pull.get("toRef") or {}).get("latestCommit") or "")
    if trusted := trust_checkout(job.workspace):
        progress.message(trusted)
    workdir = git.toplevel(job.workspace)
    base = ensure_commits(workdir, target, head, progress)
    change = ChangeRequest(
        ref=ChangeRef("bitbucket", job.repo, base, head, job.number),
        base_sha=base,
        head_sha=head,
        diff_text=git.diff(workdir, base, head),
        title=str(pull.get("title") or ""),
        body=str(pull.get("description") or ""),
        author=str(((pull.get("author") or {}).get("user") or {}).get("slug") or ""),
        workdir=workdir,
    )
    cfg = load_config(workdir, base, config_file=config_file, overrides=overrides, env=env)
    cfg, sandbox_note = sandbox_off(cfg, env)
    if not force and (why := skip_reason(change, cfg.review)):
        progress.message(f"#{job.number}: {skip_message(why, 'run `prereview bitbucket --force`')}")
        return 0
    review = review_change(change, cfg, progress=progress)
    if sandbox_note:
        review = replace(review, notes=(*review.notes, sandbox_note))
    code = exit_code(review, cfg.review.fail_level)
    progress.message(f"{len(review.findings)} finding(s) on Bitbucket pull request #{job.number}")
    if not post:
        progress.message("--no-post: nothing posted on the pull request")
    elif token is None:
        progress.message(NOT_POSTING)
    else:
        try:
            forge = BitbucketForge(api)
            opts = flow.Options(max_comments=max_comments(env), file_fallback=True, review=cfg.review)
            res = flow.publish(forge, change, review, opts, progress=progress)
            notes = forge.report(head, review, failed=code != 0) if insights_on(env) else 0
        except PermissionDenied as exc:
            progress.message(f"could not post on #{job.number}: {exc}")
        else:
            report = f"; Code Insights report with {notes} annotation(s)" if insights_on(env) else ""
            progress.message(f"#{job.number}: {res.line()}{report}")
    return code
