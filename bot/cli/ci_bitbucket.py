"""`prereview bitbucket`'s flow: a Bitbucket Data Center pull request reviewed from a CI job and published,
or a comment command answered through the job dispatcher.

Everything Bitbucket-specific is in `bot/forges/bitbucket/` (the CI environment: `ci.py`); this is the
entry point: the review through the job dispatcher (`ci_review.py`), posted with `publish/flow.py` over
`BitbucketForge`, then the Code Insights report. A build a
`pr:comment:added` webhook triggered (PREREVIEW_BITBUCKET_EVENT) runs the comment's command on the
worker's own session (`server/bitbucket_session.py`), as `prereview gitlab|gitea` do.

The job's checkout drives the review (the local git diff merge-base..head, as for the other forges);
the API gives the pull request's commits and metadata and takes the comments and the Code Insights
report. Environment: see `ci.py`; PREREVIEW_BITBUCKET_USER (the token's user slug) only if Bitbucket
sends no X-AUSERNAME header; PREREVIEW_BITBUCKET_MAX_COMMENTS (default 30) and
PREREVIEW_BITBUCKET_INSIGHTS=false (no Code Insights report).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..types import PrereviewError
from .ci_jobs import Echo
from .ci_review import CiOutlet, review

NOT_POSTING = (
    "no token (PREREVIEW_BITBUCKET_TOKEN), so nothing is posted; bind an HTTP access token from a "
    "Jenkins credential to PREREVIEW_BITBUCKET_TOKEN (see examples/bitbucket/Jenkinsfile)"
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
    from ..forges.bitbucket import ci
    from ..forges.bitbucket.api import BitbucketApi
    from ..forges.bitbucket.checkout import ensure_commits
    from ..forges.bitbucket.forge import BitbucketForge
    from ..pipeline.run import exit_code, load_config
    from ..publish import flow
    from ..types import ChangeRef, ChangeRequest
    from .ci_env import sandbox_off, trust_checkout

    progress = Echo()
    event = ci.comment_event(env) if pr is None else None
    if event is not None and event.kind != "pr":
        return _command(env, event, config_file, overrides, progress)
    job = ci.from_env(env, pr=event.number, repo=event.repo) if event else ci.from_env(env, pr=pr)
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

    def posted(change: Any, review: Any, scope: Any, cfg: Any) -> str:
        forge = BitbucketForge(api)
        opts = flow.Options(max_comments=max_comments(env), file_fallback=True, review=cfg.review)
        res = flow.publish(forge, change, review, opts, scope=scope, progress=progress)
        if not insights_on(env):
            return res.line()
        notes = forge.report(head, review, failed=exit_code(review, cfg.review.fail_level) != 0)
        return f"{res.line()}; Code Insights report with {notes} annotation(s)"

    outlet = CiOutlet(
        f"#{job.number}",
        "bitbucket",
        progress,
        posted if post and token is not None else None,
        NOT_POSTING if post else "--no-post: nothing posted on the pull request",
        where=f" on Bitbucket pull request #{job.number}",
    )
    notes = [sandbox_note] if sandbox_note else []
    return review(change, cfg, outlet, notes=notes, force=force, secrets=[token])


def _command(
    env: Mapping[str, str], event: Any, config_file: Path | None, overrides: Any, progress: Echo
) -> int:
    """A comment command: the comment is read back from Bitbucket by its id (its text and author are
    Bitbucket's, not the build parameters'), then run as the webhook server would run it."""
    from ..forges.bitbucket import ci
    from ..forges.bitbucket.api import BitbucketApi
    from ..forges.bitbucket.markers import from_bitbucket
    from ..forges.webhook import BOT_MARKER
    from ..server.bitbucket_session import BitbucketSession
    from ..server.secrets import Secrets
    from .ci_local import _command as run_command

    token = ci.token_from(env)
    url = env.get("PREREVIEW_BITBUCKET_URL", "").strip().rstrip("/")
    if event.kind == "comment":
        if not url:
            raise PrereviewError(
                "PREREVIEW_BITBUCKET_URL is not set; a webhook-triggered build needs the Bitbucket URL"
            )
        if token is None:
            raise PrereviewError(
                "answering a Bitbucket comment needs PREREVIEW_BITBUCKET_TOKEN; see docs/bitbucket.md"
            )
        repo = ci.pinned_repo(env, event.repo)
        if event.comment_id is None:
            raise PrereviewError("the pr:comment:added payload has no comment id")
        c = BitbucketApi(url, token, repo).comment(event.number, event.comment_id)
        text = from_bitbucket(str(c.get("text") or ""))
        author = str((c.get("author") or {}).get("slug") or "")
        event = replace(event, body=text, author=author, is_bot=event.is_bot or BOT_MARKER in text)
    updates = {"bitbucket_url": url} if url else {}
    secrets = Secrets(bitbucket_token=token)
    return run_command(  # type: ignore[no-any-return]
        event, "bitbucket", updates, BitbucketSession, secrets, token, config_file, overrides, env, progress
    )
