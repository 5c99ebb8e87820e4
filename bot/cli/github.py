"""`prereview github`: review the pull request of a GitHub Actions event and publish the review.

Events: pull_request (opened, synchronize, reopened, ready_for_review), pull_request_target (safe mode:
the PR's code is never checked out or run), issue_comment with a command, workflow_dispatch with a PR
number. Environment: GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, GITHUB_REPOSITORY, GITHUB_API_URL,
GITHUB_TOKEN, GITHUB_WORKSPACE (+ GITHUB_STEP_SUMMARY, GITHUB_OUTPUT when present).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from ..server import chatops
from ..types import PrereviewError
from .ci_env import sandbox_off, trust_checkout
from .options import config_options

PR_ACTIONS = {"opened", "synchronize", "reopened", "ready_for_review"}


@dataclass(frozen=True)
class Job:
    """What one event asks for."""

    number: int
    safe: bool = False  # pull_request_target: never touch the PR's code
    automatic: bool = False  # a push or an opened PR (not a person asking): /pause stops these
    incremental: bool = False  # synchronize: review only what is new since the last reviewed head
    comment_body: str | None = None  # issue_comment: parsed once the config (command prefix) is known
    comment_id: int | None = None
    author_association: str | None = None


def plan(event_name: str, event: Mapping[str, Any], *, pr: int | None = None) -> Job | str:
    """The job for an event, or a string saying why there is nothing to do."""
    if pr is not None:
        return Job(pr)
    if event_name in ("pull_request", "pull_request_target"):
        action = event.get("action")
        if action not in PR_ACTIONS:
            return f"nothing to do for {event_name}.{action}"
        pull = event.get("pull_request") or {}
        if pull.get("draft") and action != "ready_for_review":
            return (
                "draft pull request: review waits for ready_for_review (github.review_drafts: true to change)"
            )
        number = int(event.get("number") or pull["number"])
        return Job(
            number,
            safe=event_name == "pull_request_target",
            incremental=action == "synchronize",
            automatic=True,
        )
    if event_name == "issue_comment":
        issue = event.get("issue") or {}
        comment = event.get("comment") or {}
        if event.get("action") != "created" or not issue.get("pull_request"):
            return "comment is not a new comment on a pull request"
        return Job(
            int(issue["number"]),
            comment_id=comment.get("id"),
            author_association=comment.get("author_association"),
            comment_body=comment.get("body") or "",
        )
    if event_name == "workflow_dispatch":
        inputs = event.get("inputs") or {}
        given = inputs.get("pr") or inputs.get("pr-number") or inputs.get("pull_request")
        if not str(given or "").strip().isdigit():
            raise PrereviewError(
                f"workflow_dispatch needs a `pr` input with the pull request number (got {given!r}); "
                "add one or pass --pr N"
            )
        return Job(int(str(given)))
    if event_name in ("push", "schedule"):  # the default-branch warm-up (docs/github.md): caches filled
        return f"nothing to review on {event_name}: prereview is installed and its caches are saved (warm-up)"
    raise PrereviewError(
        f"event '{event_name}' is not supported; run on pull_request, pull_request_target, issue_comment or "
        "workflow_dispatch (or pass --pr N)"
    )


class _Echo:
    def message(self, text: str) -> None:
        click.echo(text, err=True)

    def step(self, done: int, total: int, label: str) -> None:
        click.echo(f"[{done}/{total}] {label}", err=True)


def _env(env: Mapping[str, str], name: str, hint: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise PrereviewError(f"{name} is not set; {hint}")
    return value


@click.command("github")
@click.option("--event-name", envvar="GITHUB_EVENT_NAME", help="Event name (default: $GITHUB_EVENT_NAME).")
@click.option(
    "--event-path",
    envvar="GITHUB_EVENT_PATH",
    type=click.Path(path_type=Path),
    help="Event payload JSON (default: $GITHUB_EVENT_PATH).",
)
@click.option("--pr", "pr_number", type=int, help="Review this pull request (overrides the event).")
@click.option("--full", is_flag=True, help="Review the whole PR even on a push (no incremental review).")
@config_options("Config file (default: .prereview.yml at the PR's base revision).")
def command(
    event_name: str | None,
    event_path: Path | None,
    pr_number: int | None,
    full: bool,
    config_file: Path | None,
    overrides: dict[str, Any],
) -> None:
    """Review the pull request of a GitHub Actions event and post the review on it."""
    env = os.environ
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
        return
    sys.exit(_run(job, env, overrides=overrides, config_file=config_file, full=full))


def _run(
    job: Job, env: Mapping[str, str], *, overrides: dict[str, Any], config_file: Path | None, full: bool
) -> int:
    from ..forges.github.api import GitHubAPI
    from ..forges.github.forge import GitHubForge
    from ..pipeline.run import load_config
    from ..publish.github import GitHubPublisher

    token = _env(env, "GITHUB_TOKEN", "pass `env: GITHUB_TOKEN: ${{ github.token }}` (the action does this)")
    repo = _env(env, "GITHUB_REPOSITORY", "set it to OWNER/NAME")
    api = GitHubAPI(env.get("GITHUB_API_URL") or "https://api.github.com", token, repo)
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
                "tests": "off",
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
        if command.name == "describe":
            return _describe(job, cfg, forge, publisher, update=command.update)
        if command.name != "review":
            return _chat(command, publisher, api, job, cfg.server.command_prefix)
        since = state.head if command.incremental else None
    elif state.paused and job.automatic:
        click.echo("prereview: automatic reviews are paused on this PR (comment /resume to resume)", err=True)
        return 0
    return _review(
        job,
        cfg,
        forge,
        publisher,
        env,
        since=since,
        state=state,
        notes=[sandbox_note] if sandbox_note else [],
    )


def _describe(job: Job, cfg: Any, forge: Any, publisher: Any, *, update: bool) -> int:
    """`/describe [--update]`: the walkthrough in the summary comment, or in the PR description."""
    from ..findings.walkthrough import describe_change
    from ..pipeline.run import LazyModel
    from ..render.walkthrough import walkthrough_markdown
    from ..types import ChangeRef

    progress = _Echo()
    change = forge.fetch(ChangeRef("github", forge.api.repo_name, number=job.number))
    w = describe_change(change, cfg, LazyModel(cfg, progress))
    block = walkthrough_markdown(w, change.head_sha)
    if update:
        publisher.set_description(block)
    else:
        publisher.set_walkthrough(block)
    where = "the PR description" if update else "the summary comment"
    click.echo(f"prereview: walkthrough of {len(w.files)} file(s) written to {where}", err=True)
    return 0


def _react(api: Any, comment_id: int) -> None:
    from ..forges.base import PermissionDenied

    try:
        api.react(comment_id, "eyes")
    except PermissionDenied:  # a reaction is a courtesy; the command still runs
        click.echo("prereview: cannot react to the command comment (token lacks issues: write)", err=True)


def _chat(command: chatops.Command, publisher: Any, api: Any, job: Job, prefix: str) -> int:
    if command.name in ("pause", "resume"):
        publisher.set_paused(command.name == "pause")
        click.echo(
            f"prereview: automatic reviews {'paused' if command.name == 'pause' else 'resumed'}", err=True
        )
        return 0
    if command.name == "help":
        api.create_issue_comment(job.number, chatops.help_text(prefix))
        return 0
    api.create_issue_comment(
        job.number,
        f"`{command.name}` runs on the prereview server (`prereview serve`), not in "
        "the GitHub Action.\n\n" + chatops.help_text(prefix),
    )
    return 0


def _review(
    job: Job,
    cfg: Any,
    forge: Any,
    publisher: Any,
    env: Mapping[str, str],
    *,
    since: str | None,
    state: Any,
    notes: list[str],
) -> int:
    from ..change.diff import parse
    from ..forges.base import PermissionDenied
    from ..forges.github import actions
    from ..forges.github.checks import create_check_run, upload_sarif
    from ..forges.github.diff import restrict_diff
    from ..pipeline.run import exit_code, review_change
    from ..render.markdown import summary
    from ..review_filters import skip_message, skip_reason
    from ..types import ChangeRef, Skipped

    progress = _Echo()
    change = forge.fetch(ChangeRef("github", forge.api.repo_name, number=job.number))
    if job.automatic and (why := skip_reason(change, cfg.review)):
        click.echo(f"prereview: {skip_message(why)}", err=True)
        actions.append_step_summary(f"### prereview\n\n{skip_message(why)}\n", env)
        return 0
    pr_diff = parse(change.diff_text)
    scope = None
    reviewed = change
    notes = list(notes)
    if job.safe:
        notes.append(
            "pull_request_target safe mode: the PR's code was not checked out; tests and sandbox are off."
        )
    if since and since != change.head_sha:
        inc = forge.local_diff(since, change.head_sha)
        if inc is None:
            progress.message(f"incremental review impossible ({since[:12]} not in the checkout): full review")
        else:
            reviewed = replace(change, diff_text=restrict_diff(change.diff_text, inc))
            scope = parse(reviewed.diff_text)
            notes.append(
                f"Incremental review of the commits {since[:12]}..{change.head_sha[:12]}; "
                "comment `/review` for a full review."
            )
    progress.message(
        f"reviewing {forge.api.repo_name}#{job.number} {change.base_sha[:12]}..{change.head_sha[:12]}"
    )
    review = review_change(reviewed, cfg, progress=progress)
    skipped = tuple(Skipped(p, "GitHub sent no patch (binary or too large)") for p in forge.missing_patches)
    review = replace(
        review,
        notes=review.notes + tuple(notes),
        coverage=replace(review.coverage, skipped=review.coverage.skipped + skipped),
    )
    code = exit_code(review, cfg.review.fail_level)
    try:
        result = publisher.publish(review, pr_diff, scope=scope, state=state)
        progress.message(
            f"posted {result.posted} comment(s), {result.skipped} already there, {result.in_summary} "
            f"in the summary, {result.rejected} refused by GitHub, {result.resolved} resolved"
        )
        actions.append_step_summary(summary(review, not_inline=review.findings), env)
    except PermissionDenied as exc:
        click.echo(f"::warning::{actions.escape_data(f'prereview cannot comment on this PR: {exc}')}")
        for line in actions.annotation_lines(review.findings):
            click.echo(line)
        actions.append_step_summary(summary(review, not_inline=review.findings), env)
        if cfg.github.fail_on_permission:
            raise PrereviewError(str(exc)) from None
    for wanted, name, fn in (
        (
            cfg.github.check_run,
            "check run",
            lambda: create_check_run(forge.api, review, conclusion="failure" if code else "neutral"),
        ),
        (
            cfg.github.sarif_upload,
            "SARIF upload",
            lambda: upload_sarif(forge.api, review, ref=f"refs/pull/{job.number}/head"),
        ),
    ):
        if wanted:
            try:
                fn()
            except PermissionDenied as exc:
                click.echo(f"::warning::{actions.escape_data(f'prereview {name} skipped: {exc}')}")
                if cfg.github.fail_on_permission:
                    raise PrereviewError(str(exc)) from None
    actions.set_outputs(actions.review_outputs(review), env)
    return code
