"""`prereview github`'s flow: the Action's event → a review of the PR from the job's checkout through the
job dispatcher (`ci_action.py`: published with the step summary, outputs, check run and SARIF); or a
comment command through the same dispatcher.

Events: pull_request (opened, synchronize, reopened, ready_for_review), pull_request_target (safe mode:
the PR's code is never checked out or run), issue_comment with a command, workflow_dispatch with a PR
number. Environment: GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, GITHUB_REPOSITORY, GITHUB_API_URL,
GITHUB_TOKEN, GITHUB_WORKSPACE (+ GITHUB_SERVER_URL, GITHUB_STEP_SUMMARY, GITHUB_OUTPUT when present).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from ..forges.github.ci import Job, plan
from ..jobs import chatops
from ..types import PrereviewError
from . import ci_action
from .ci_env import sandbox_off, trust_checkout
from .ci_jobs import Echo, need_env

SAFE_MODE = "pull_request_target safe mode: the PR's code was not checked out; tests and sandbox are off."


def run(
    env: Mapping[str, str],
    event_name: str | None,
    event_path: Path | None,
    pr_number: int | None,
    full: bool,
    config_file: Path | None,
    overrides: dict[str, Any],
) -> int:
    event: dict[str, Any] = {}
    if event_path is not None:
        try:
            event = json.loads(Path(event_path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise PrereviewError(
                f"cannot read the event payload {event_path} ({exc}); check GITHUB_EVENT_PATH"
            ) from None
    elif pr_number is None:
        raise PrereviewError("GITHUB_EVENT_PATH is not set; run inside GitHub Actions or pass --pr N")
    job = plan(event_name or "", event, pr=pr_number)
    if isinstance(job, str):
        click.echo(f"prereview: {job}", err=True)
        return 0
    return _run(job, env, overrides=overrides, config_file=config_file, full=full)


def _run(
    job: Job, env: Mapping[str, str], *, overrides: dict[str, Any], config_file: Path | None, full: bool
) -> int:
    from ..forges.github.api import GitHubAPI
    from ..forges.github.forge import GitHubForge
    from ..pipeline.run import load_config
    from ..publish.github import GitHubPublisher

    token = need_env(
        env, "GITHUB_TOKEN", "pass `env: GITHUB_TOKEN: ${{ github.token }}` (the action does this)"
    )
    repo = need_env(env, "GITHUB_REPOSITORY", "set it to OWNER/NAME")
    api_url = env.get("GITHUB_API_URL") or "https://api.github.com"
    api = GitHubAPI(api_url, token, repo)
    ws = Path(env["GITHUB_WORKSPACE"]) if env.get("GITHUB_WORKSPACE") else None
    if ws is not None and (trusted := trust_checkout(ws)):
        click.echo(f"prereview: {trusted}", err=True)
    # Safe mode: the workspace holds the base branch (trusted) and is read for config only.
    forge = GitHubForge(api, workspace=None if job.safe else ws)
    pr = api.pull(job.number)
    cfg = load_config(ws, pr.base.sha, config_file=config_file, overrides=overrides, env=env)
    api.write_interval = cfg.github.write_interval
    cfg, sandbox_note = sandbox_off(cfg, env)
    if job.safe and not cfg.github.allow_tests_on_pull_request_target:
        cfg = cfg.model_copy(
            update={
                "tests": cfg.tests.model_copy(update={"enabled": False}),
                "sandbox": cfg.sandbox.model_copy(update={"backend": "none"}),
                "patches": cfg.patches.model_copy(update={"enabled": False}),
            }
        )
    # The summary and threads are recognised as prereview's by their author: `*[bot]` (the Actions token),
    # or a login listed in server.bot_logins (a personal access token's user).
    bots = frozenset(x.lower() for x in cfg.server.bot_logins)
    publisher = GitHubPublisher(
        api,
        job.number,
        max_comments=cfg.github.max_comments_per_request,
        bot_logins=bots,
        review_cfg=cfg.review,
    )
    state = publisher.summary()
    # Since the head the last review recorded in its summary, not the push's `before`: a run that was
    # cancelled or failed would otherwise leave its commits unreviewed. No recorded head: from the base.
    since = state.head if job.incremental and cfg.github.incremental and not full else None
    if job.comment_body is not None:
        command = chatops.parse(job.comment_body, cfg.server.command_prefix)
        if command is None:
            click.echo("prereview: the comment holds no prereview command", err=True)
            return 0
        if not chatops.is_authorized(job.author_association):
            click.echo(
                f"prereview: ignoring {command.name} from a {job.author_association} (not a collaborator)",
                err=True,
            )
            return 0
        if job.comment_id is not None:
            _react(api, job.comment_id)
        if command.name != "review":
            return _command(command, job, cfg, env, api_url, token, None if job.safe else ws)
        since = state.head if command.incremental else None
    notes = [sandbox_note] if sandbox_note else []
    if job.safe:
        notes.append(SAFE_MODE)
    return ci_action.review(
        job.number,
        job.automatic,
        cfg,
        forge,
        publisher,
        env,
        since=since,
        state=state,
        notes=notes,
        token=token,
    )


def _command(
    command: chatops.Command,
    job: Job,
    cfg: Any,
    env: Mapping[str, str],
    api_url: str,
    token: str,
    ws: Path | None,
) -> int:
    """`/describe`, `/ask`, `/fix`, `/pause`, `/resume`, `/help` as the server runs them, on this PR."""
    from ..jobs.job import Job as JobRecord
    from ..server.forge_session import GitHubSession
    from ..server.secrets import Secrets
    from .ci_jobs import CheckedOut, dispatch

    kind = "help" if command.name == "ask" and not command.question else command.name
    record = JobRecord(
        kind,
        "github",
        need_env(env, "GITHUB_REPOSITORY", "set it to OWNER/NAME"),
        job.number,
        comment_id=job.comment_id,
        text=command.question,
        update=command.update,
        incremental=command.incremental,
    )
    git_url = env.get("GITHUB_SERVER_URL") or "https://github.com"
    server = cfg.server.model_copy(update={"github_api_url": api_url, "github_git_url": git_url})
    cfg = cfg.model_copy(update={"server": server})
    session = CheckedOut(GitHubSession(record, cfg, Secrets(github_token=token)), ws)
    return dispatch(record, session, cfg, [token], Echo(""))


def _react(api: Any, comment_id: int) -> None:
    from ..forges.base import PermissionDenied

    try:
        api.react(comment_id, "eyes")
    except PermissionDenied:  # a reaction is a courtesy; the command still runs
        click.echo("prereview: cannot react to the command comment (token lacks issues: write)", err=True)
