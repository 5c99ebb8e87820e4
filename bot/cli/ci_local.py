"""`prereview gitlab` and `prereview gitea`: their CI environment → the change of the job's checkout (the
local git diff base..head) and the job's config, reviewed and posted on the MR/PR through the job
dispatcher (`ci_review.py`); or a comment command through the same dispatcher.

GitLab: an MR pipeline (`CI_MERGE_REQUEST_IID`, …; the Code Quality report is always written), or a
pipeline a note webhook triggered (`TRIGGER_PAYLOAD`: a comment command). Gitea/Forgejo Actions: a
`pull_request` run, or an `issue_comment` run (a comment command). Posting needs a token that may write
(`PREREVIEW_GITLAB_TOKEN`; `PREREVIEW_GITEA_TOKEN`, `GITEA_TOKEN` or the run's `GITHUB_TOKEN`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..types import PrereviewError
from .ci_env import sandbox_off, trust_checkout
from .ci_jobs import Echo, dispatch
from .ci_review import CiOutlet, review


def gitlab(
    env: Mapping[str, str],
    *,
    mr_iid: int | None = None,
    codequality_path: Path | None = None,
    config_file: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    post: bool = True,
    force: bool = False,
) -> int:
    from ..forges.gitlab.ci import NOT_POSTING, Pipeline, comment_event, ssl_verify_from, token_from
    from ..forges.gitlab.forge import GitLabForge
    from ..publish.gitlab import publish

    progress = Echo()
    token = token_from(env)
    if mr_iid is None and (event := comment_event(env)) is not None:
        return _gitlab_command(env, event, token, config_file, overrides, progress)
    p = Pipeline.from_env(env, mr_iid=mr_iid)

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
    meta = {"title": p.title, "body": p.description, "author": p.author, "labels": p.labels}
    change = _checked_out(
        "gitlab", p.project, p.mr_iid, base, p.head_sha, p.project_dir, meta, progress, GitLabForge.checkout
    )
    cfg, sandbox_note = _config(change, config_file, overrides, env)
    report = codequality_path or Path(cfg.gitlab.codequality_path)
    if not change.diff_text.strip():
        progress.message(f"nothing to review: {base[:12]}..{p.head_sha[:12]} has no changes")

    def posted(change: Any, review: Any, scope: Any, cfg: Any) -> str:
        api = forge(cfg.gitlab.timeout, cfg.gitlab.retries)
        res = publish(api, change, review, cfg.gitlab, progress=progress, scope=scope, review_cfg=cfg.review)
        return res.line()

    outlet = CiOutlet(
        f"!{p.mr_iid}",
        "gitlab",
        progress,
        posted if post and token is not None else None,
        NOT_POSTING if post else "--no-post: nothing posted on the merge request",
        report=report if report.is_absolute() else p.project_dir / report,
        fail_on_permission=lambda cfg: bool(cfg.gitlab.fail_on_permission),
    )
    notes = [sandbox_note] if sandbox_note else []
    return review(change, cfg, outlet, notes=notes, force=force, secrets=[token], kind="MR")


def gitea(
    env: Mapping[str, str],
    *,
    pr: int | None = None,
    config_file: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    post: bool = True,
    force: bool = False,
) -> int:
    from ..forges.gitea.ci import NOT_POSTING, Run, comment_event, token_from
    from ..forges.gitea.forge import GiteaForge
    from ..publish.gitea import publish

    progress = Echo()
    token = token_from(env)
    if pr is None and (event := comment_event(env)) is not None:
        return _gitea_command(env, event, token, config_file, overrides, progress)
    r = Run.from_env(env, pr=pr)
    if isinstance(r, str):
        progress.message(r)
        return 0

    def forge(timeout: float = 30.0, retries: int = 4) -> GiteaForge:  # built when needed: no I/O before
        return GiteaForge(r.server_url, token, r.repo, timeout=timeout, retries=retries)

    base, head = r.base_sha, r.head_sha
    meta = {"title": r.title, "body": r.body, "author": r.author, "labels": r.labels}
    if not base or not head:  # --pr without a pull_request payload: ask the API
        pull = forge().pull(r.number)
        base = str(pull.get("merge_base") or (pull.get("base") or {}).get("sha") or "")
        head = str((pull.get("head") or {}).get("sha") or "")
        meta.update(title=str(pull.get("title") or ""), body=str(pull.get("body") or ""))
        meta["author"] = str((pull.get("user") or {}).get("login") or "")
    change = _checked_out(
        "gitea", r.repo, r.number, base, head, r.workspace, meta, progress, GiteaForge.checkout
    )
    cfg, sandbox_note = _config(change, config_file, overrides, env)

    def posted(change: Any, review: Any, scope: Any, cfg: Any) -> str:
        api = forge(cfg.gitea.timeout, cfg.gitea.retries)
        return publish(api, change, review, cfg.gitea, progress=progress, review_cfg=cfg.review).line()

    outlet = CiOutlet(
        f"#{r.number}",
        "gitea",
        progress,
        posted if post and token is not None else None,
        NOT_POSTING if post else "--no-post: nothing posted on the pull request",
        where=f" on {r.forge} pull request #{r.number}",
        fail_on_permission=lambda cfg: bool(cfg.gitea.fail_on_permission),
    )
    notes = [sandbox_note] if sandbox_note else []
    return review(change, cfg, outlet, notes=notes, force=force, secrets=[token])


def _checked_out(
    forge: str,
    repo: str,
    number: int,
    base: str,
    head: str,
    checkout: Path,
    meta: Mapping[str, Any],
    progress: Echo,
    reachable: Any,
) -> Any:
    """The change from the CI job's checkout: base and head made reachable (a shallow clone fetches
    them), the local diff."""
    from ..change import git
    from ..types import ChangeRef, ChangeRequest

    if trusted := trust_checkout(checkout):
        progress.message(trusted)
    workdir = git.toplevel(checkout)
    change = ChangeRequest(
        ref=ChangeRef(forge, repo, base, head, number),
        base_sha=base,
        head_sha=head,
        diff_text="",
        workdir=workdir,
        **meta,
    )
    reachable(change, workdir, progress)
    return replace(change, diff_text=git.diff(workdir, base, head))


def _config(change: Any, config_file: Path | None, overrides: Any, env: Mapping[str, str]) -> tuple[Any, Any]:
    from ..pipeline.run import load_config

    cfg = load_config(change.workdir, change.base_sha, config_file=config_file, overrides=overrides, env=env)
    return sandbox_off(cfg, env)


def _gitlab_command(
    env: Mapping[str, str],
    event: Any,
    token: str | None,
    config_file: Path | None,
    overrides: Any,
    progress: Echo,
) -> int:
    from ..server.forge_session import GitLabSession
    from ..server.secrets import Secrets

    api = env.get("CI_API_V4_URL") or (
        env["CI_SERVER_URL"].rstrip("/") + "/api/v4" if env.get("CI_SERVER_URL") else ""
    )
    updates = {"gitlab_url": api} if api else {}
    return _command(
        event,
        "gitlab",
        updates,
        GitLabSession,
        Secrets(gitlab_token=token),
        token,
        config_file,
        overrides,
        env,
        progress,
    )


def _gitea_command(
    env: Mapping[str, str],
    event: Any,
    token: str | None,
    config_file: Path | None,
    overrides: Any,
    progress: Echo,
) -> int:
    from ..server.gitea_session import GiteaSession
    from ..server.secrets import Secrets

    url = env.get("PREREVIEW_GITEA_URL") or env.get("GITHUB_SERVER_URL") or ""
    updates = {"gitea_url": url.rstrip("/")} if url else {}
    return _command(
        event,
        "gitea",
        updates,
        GiteaSession,
        Secrets(gitea_token=token),
        token,
        config_file,
        overrides,
        env,
        progress,
    )


def _command(
    event: Any,
    forge: str,
    server_updates: dict[str, str],
    session_type: Any,
    secrets: Any,
    token: str | None,
    config_file: Path | None,
    overrides: Any,
    env: Mapping[str, str],
    progress: Echo,
) -> int:
    """A comment event → the job the server would run for it (`policy.decide`), run by the dispatcher."""
    from ..jobs.policy import decide
    from ..pipeline.run import load_config

    cfg = load_config(None, None, config_file=config_file, overrides=overrides, env=env)
    cfg = cfg.model_copy(update={"server": cfg.server.model_copy(update=server_updates)})
    cfg, _ = sandbox_off(cfg, env)
    if event is None or event.kind != "comment":
        progress.message("the event is not a comment on a pull/merge request: nothing to do")
        return 0
    decision = decide(event, cfg.server, paused=False)
    if decision.job is None:
        progress.message(f"nothing to do: {decision.reason}")
        return 0
    if token is None:
        raise PrereviewError(f"answering a {forge} comment needs a token that may post; see docs/{forge}.md")
    job = decision.job
    session = session_type(job, cfg, secrets)
    if job.comment_id is not None:
        session.react(job.comment_id)
    return dispatch(job, session, cfg, [token], progress)
