"""`prereview gitea`: review the pull request of a Gitea Actions / Forgejo Actions run and publish it.

Both runners (act_runner, forgejo-runner) run GitHub-style workflows and set the GitHub-style
variables this command reads: GITHUB_EVENT_NAME, GITHUB_EVENT_PATH (Gitea's `PullRequestPayload`),
GITHUB_REPOSITORY, GITHUB_SERVER_URL, GITHUB_WORKSPACE, plus GITEA_ACTIONS=true or FORGEJO_ACTIONS=true.
The job's checkout drives the review (the local git diff merge-base..head); posting needs a token:
PREREVIEW_GITEA_TOKEN, else GITEA_TOKEN, else the run's own GITHUB_TOKEN.
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

from ..types import PrereviewError
from .ci_env import sandbox_off, trust_checkout
from .options import config_options

TOKEN_VARS = ("PREREVIEW_GITEA_TOKEN", "GITEA_TOKEN", "GITHUB_TOKEN")
# Gitea's webhook payload says `synchronized`; GitHub-style workflow filters say `synchronize`.
PR_ACTIONS = frozenset({"opened", "reopened", "synchronized", "synchronize"})
NOT_POSTING = (
    "no token (PREREVIEW_GITEA_TOKEN, GITEA_TOKEN or GITHUB_TOKEN), so nothing is posted; pass "
    "`PREREVIEW_GITEA_TOKEN: ${{ secrets.PREREVIEW_GITEA_TOKEN }}` in the step's env "
    "(or the run's `${{ secrets.GITHUB_TOKEN }}`)"
)


@dataclass(frozen=True)
class Run:
    """The pull request an Actions run is for, from its environment and event payload."""

    server_url: str
    repo: str
    number: int
    base_sha: str
    head_sha: str
    workspace: Path
    title: str = ""
    body: str = ""
    author: str = ""
    labels: tuple[str, ...] = ()
    forge: str = "Gitea"

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, pr: int | None = None) -> Run | str:
        """The run, or a string saying why there is nothing to review."""
        repo = _need(env, "GITHUB_REPOSITORY", "run in Gitea/Forgejo Actions or set it to owner/name")
        url = env.get("PREREVIEW_GITEA_URL") or _need(
            env, "GITHUB_SERVER_URL", "run in Gitea/Forgejo Actions or set PREREVIEW_GITEA_URL"
        )
        event = _event(env)
        name = env.get("GITHUB_EVENT_NAME", "")
        raw = event.get("pull_request")
        pull: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if pr is None:
            if name not in ("pull_request", ""):
                raise PrereviewError(
                    f"event '{name}' is not supported; run on `pull_request` (or pass --pr N)"
                )
            action = str(event.get("action") or "")
            if action not in PR_ACTIONS:
                return f"nothing to do for pull_request.{action or '?'}"
        number = pr or _int(event.get("number")) or _int(pull.get("number"))
        if number is None:
            raise PrereviewError("no pull request number in the event; run on pull_request or pass --pr N")
        base, head = pull.get("base") or {}, pull.get("head") or {}
        return cls(
            server_url=url,
            repo=repo,
            number=number,
            base_sha=str(pull.get("merge_base") or base.get("sha") or ""),
            head_sha=str(head.get("sha") or env.get("GITHUB_SHA") or ""),
            workspace=Path(env.get("GITHUB_WORKSPACE") or "."),
            title=str(pull.get("title") or ""),
            body=str(pull.get("body") or ""),
            author=str((pull.get("user") or {}).get("login") or ""),
            labels=tuple(
                str(x["name"]) for x in pull.get("labels") or [] if isinstance(x, dict) and x.get("name")
            ),
            forge="Forgejo" if env.get("FORGEJO_ACTIONS") == "true" else "Gitea",
        )


def _need(env: Mapping[str, str], name: str, hint: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise PrereviewError(f"{name} is not set; {hint}")
    return value


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _event(env: Mapping[str, str]) -> dict[str, Any]:
    path = env.get("GITHUB_EVENT_PATH", "").strip()
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PrereviewError(f"cannot read the event payload GITHUB_EVENT_PATH={path} ({exc})") from None
    return data if isinstance(data, dict) else {}


def token_from(env: Mapping[str, str]) -> str | None:
    return next((env[v].strip() for v in TOKEN_VARS if env.get(v, "").strip()), None)


class _Echo:
    """Plain lines for CI logs (no spinners)."""

    def message(self, text: str) -> None:
        click.echo(f"prereview: {text}", err=True)

    def step(self, done: int, total: int, label: str) -> None:
        click.echo(f"prereview: [{done}/{total}] {label}", err=True)


@click.command("gitea")
@click.option("--pr", "pr_number", type=int, help="Review this pull request (default: the event's).")
@config_options("Config file (default: .prereview.yml at the PR's base revision).")
@click.option("--no-post", is_flag=True, help="Review only; post nothing on the pull request.")
@click.option("--force", is_flag=True, help="Review even when review.ignore (author, label, title) matches.")
def command(
    pr_number: int | None, config_file: Path | None, overrides: dict[str, Any], no_post: bool, force: bool
) -> None:
    """Review the pull request of a Gitea/Forgejo Actions run and post the review on it."""
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
    from ..forges.gitea.forge import GiteaForge
    from ..pipeline.run import exit_code, load_config, review_change
    from ..publish.gitea import publish
    from ..review_filters import skip_message, skip_reason
    from ..types import ChangeRef, ChangeRequest

    r = Run.from_env(env, pr=pr)
    progress = _Echo()
    if isinstance(r, str):
        progress.message(r)
        return 0
    token = token_from(env)

    def forge(timeout: float = 30.0, retries: int = 4) -> GiteaForge:  # built when needed: no I/O before
        return GiteaForge(r.server_url, token, r.repo, timeout=timeout, retries=retries)

    base, head, title, body, author, labels = r.base_sha, r.head_sha, r.title, r.body, r.author, r.labels
    if not base or not head:  # --pr without a pull_request payload: ask the API
        pull = forge().pull(r.number)
        base = str(pull.get("merge_base") or (pull.get("base") or {}).get("sha") or "")
        head = str((pull.get("head") or {}).get("sha") or "")
        title, body = str(pull.get("title") or ""), str(pull.get("body") or "")
        author = str((pull.get("user") or {}).get("login") or "")
    if trusted := trust_checkout(r.workspace):
        progress.message(trusted)
    workdir = git.toplevel(r.workspace)
    ref = ChangeRef("gitea", r.repo, base, head, r.number)
    change = ChangeRequest(
        ref=ref,
        base_sha=base,
        head_sha=head,
        diff_text="",
        title=title,
        body=body,
        author=author,
        workdir=workdir,
        labels=labels,
    )
    GiteaForge.checkout(change, workdir, progress)
    change = replace(change, diff_text=git.diff(workdir, base, head))
    cfg = load_config(workdir, base, config_file=config_file, overrides=overrides, env=env)
    cfg, sandbox_note = sandbox_off(cfg, env)
    if not force and (why := skip_reason(change, cfg.review)):
        progress.message(f"#{r.number}: {skip_message(why, 'run `prereview gitea --force`')}")
        return 0
    review = review_change(change, cfg, progress=progress)
    if sandbox_note:
        review = replace(review, notes=(*review.notes, sandbox_note))
    progress.message(f"{len(review.findings)} finding(s) on {r.forge} pull request #{r.number}")
    if not post:
        progress.message("--no-post: nothing posted on the pull request")
    elif token is None:
        progress.message(NOT_POSTING)
    else:
        try:
            res = publish(
                forge(cfg.gitea.timeout, cfg.gitea.retries),
                change,
                review,
                cfg.gitea,
                progress=progress,
                review_cfg=cfg.review,
            )
        except PermissionDenied as exc:
            if cfg.gitea.fail_on_permission:
                raise
            progress.message(f"could not post on #{r.number}: {exc}")
        else:
            progress.message(f"#{r.number}: {res.line()}")
    return exit_code(review, cfg.review.fail_level)
