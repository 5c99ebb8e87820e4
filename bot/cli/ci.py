"""`prereview github|gitlab|gitea|bitbucket`: the CI commands, one flow for the four forges.

Each reads its CI environment (`forges/<forge>/ci.py`: the event, the PR/MR, the checkout, the token).
A push or an opened PR is reviewed from the job's checkout and published with what the CI offers
(`ci_github.py`: GitHub's step summary, checks and SARIF; GitLab's Code Quality report; Bitbucket's Code
Insights report). A comment command (GitHub and Gitea/Forgejo Actions' `issue_comment`; a GitLab
pipeline a note webhook triggered, `TRIGGER_PAYLOAD`; a Jenkins build a Bitbucket comment webhook
triggered, PREREVIEW_BITBUCKET_EVENT) runs through the one job dispatcher the webhook server uses
(`bot/jobs/run.py`), on the same forge sessions, so `/ask`, `/describe`, `/fix`, `/help` answer the
same everywhere.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import click

from ..types import PrereviewError
from .options import config_options


class Echo:
    """Plain lines for CI logs (no spinners): the progress of every CI command."""

    def __init__(self, prefix: str = "prereview: ") -> None:
        self.prefix = prefix

    def message(self, text: str) -> None:
        click.echo(f"{self.prefix}{text}", err=True)

    def step(self, done: int, total: int, label: str) -> None:
        click.echo(f"{self.prefix}[{done}/{total}] {label}", err=True)


class Forgetful:
    """A CI job's `JobState`: nothing is remembered between runs (the server keeps a store; a CI job has
    only what the forge shows), so `/review -i` through the dispatcher reviews everything."""

    def paused(self, pr_key: str) -> bool:
        return False

    def set_paused(self, pr_key: str, paused: bool) -> None:
        return None

    def last_reviewed(self, pr_key: str) -> dict[str, Any] | None:
        return None

    def set_reviewed(self, pr_key: str, head: str, added: dict[str, list[str]], max_bytes: int) -> None:
        return None

    def last_findings(self, pr_key: str) -> dict[str, Any] | None:
        return None

    def set_findings(self, pr_key: str, head: str, findings: Iterable[Any], most: int = 40) -> None:
        return None


class CheckedOut:
    """A forge session that reads files and commits from the CI job's own checkout when it has them
    (no second fetch), and reports no `.prereview.yml`: the CI command has resolved the config already
    (at the base, or --config, with the command line's overrides)."""

    def __init__(self, inner: Any, workspace: Path | None) -> None:
        self._inner, self._ws = inner, workspace

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _has(self, *shas: str) -> bool:
        from ..change import git

        if self._ws is None or not (self._ws / ".git").exists():
            return False
        try:
            return all(git.resolve(self._ws, s) for s in shas)
        except PrereviewError:
            return False

    def base_file(self, sha: str, path: str, dest: Path) -> str | None:
        from ..change import git
        from ..config import CONFIG_FILE

        if path == CONFIG_FILE:
            return None
        if self._has(sha):
            assert self._ws is not None
            return git.show(self._ws, sha, path)
        return self._inner.base_file(sha, path, dest)  # type: ignore[no-any-return]

    def clone(self, shas: list[str], dest: Path) -> Path:
        if self._has(*shas):
            assert self._ws is not None
            return self._ws
        return self._inner.clone(shas, dest)  # type: ignore[no-any-return]


def dispatch(job: Any, session: Any, cfg: Any, secrets: Iterable[str], progress: Echo) -> int:
    """A comment command through the one job dispatcher, everything it posts and asks masked."""
    from ..jobs import run as jobs
    from ..pipeline.run import LazyModel
    from ..server.masking import MaskedLazyModel, MaskedSession, Masking

    masking = Masking(frozenset(s for s in secrets if len(s) >= 8))
    forge = MaskedSession(session, masking)
    if job.kind in ("pause", "resume") and job.forge != "github":
        forge.reply(NO_PAUSE.format(kind=job.kind, forge=job.forge.capitalize()), job.comment_id)
        return 0
    progress.message(f"{job.kind} for {job.repo}#{job.number}")
    jobs.run(job, forge, cfg, MaskedLazyModel(LazyModel(cfg, progress), masking), state=Forgetful())
    return 0


NO_PAUSE = (
    "`{kind}` needs somewhere to remember it: the prereview server (`prereview serve`) does; a {forge} CI "
    "job keeps nothing between runs. To skip automatic reviews in CI, use `review.ignore` (labels, "
    "authors, title patterns) in `.prereview.yml`."
)


def need_env(env: Mapping[str, str], name: str, hint: str) -> str:
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
def github(
    event_name: str | None,
    event_path: Path | None,
    pr_number: int | None,
    full: bool,
    config_file: Path | None,
    overrides: dict[str, Any],
) -> None:
    """Review the pull request of a GitHub Actions event and post the review on it."""
    from .ci_github import run

    sys.exit(run(os.environ, event_name, event_path, pr_number, full, config_file, overrides))


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
def gitlab(
    mr_iid: int | None,
    codequality_path: Path | None,
    config_file: Path | None,
    overrides: dict[str, Any],
    no_post: bool,
    force: bool,
) -> None:
    """Review the merge request of a GitLab MR pipeline and post the review on it."""
    from .ci_local import gitlab as run

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


@click.command("gitea")
@click.option("--pr", "pr_number", type=int, help="Review this pull request (default: the event's).")
@config_options("Config file (default: .prereview.yml at the PR's base revision).")
@click.option("--no-post", is_flag=True, help="Review only; post nothing on the pull request.")
@click.option("--force", is_flag=True, help="Review even when review.ignore (author, label, title) matches.")
def gitea(
    pr_number: int | None, config_file: Path | None, overrides: dict[str, Any], no_post: bool, force: bool
) -> None:
    """Review the pull request of a Gitea/Forgejo Actions run and post the review on it."""
    from .ci_local import gitea as run

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


@click.command("bitbucket")
@click.option("--pr", "pr_number", type=int, help="Review this pull request (default: the CI's CHANGE_ID).")
@config_options("Config file (default: .prereview.yml at the PR's base revision).")
@click.option("--no-post", is_flag=True, help="Review only; post nothing on the pull request.")
@click.option("--force", is_flag=True, help="Review even when review.ignore (author, label, title) matches.")
def bitbucket(
    pr_number: int | None, config_file: Path | None, overrides: dict[str, Any], no_post: bool, force: bool
) -> None:
    """Review a Bitbucket Data Center pull request from CI (Jenkins) and post the review on it."""
    from .ci_bitbucket import run

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
