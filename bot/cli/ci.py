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
from pathlib import Path
from typing import Any

import click

from .options import config_options


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
