"""The Gitea / Forgejo entry points' publisher: `bot/publish/flow.py` over `GiteaForge` (one COMMENT
review with inline comments, one summary comment edited in place, nothing posted twice), and
`/describe`'s walkthrough. Positions: `forges/gitea/placement.py`."""

from __future__ import annotations

from typing import Any

from ..config import GiteaConfig, ReviewConfig
from ..forges.gitea.forge import GiteaForge, own_summary
from ..progress import Progress
from ..types import ChangeRequest, Review
from .flow import Options, PublishResult
from .flow import publish as publish_with


def publish(
    api: GiteaForge,
    change: ChangeRequest,
    review: Review,
    cfg: GiteaConfig,
    *,
    progress: Progress | None = None,
    review_cfg: ReviewConfig | None = None,
) -> PublishResult:
    """Post `review` (anchored on the PR's diff in `change`) on pull request `change.ref.number`."""
    if change.ref.number is None:
        raise ValueError("publish needs the pull request number in change.ref.number")
    opts = Options(max_comments=cfg.max_comments, file_comments=False, review=review_cfg or ReviewConfig())
    return publish_with(api, change, review, opts, progress=progress)


def set_walkthrough(api: Any, number: int, block: str, *, into_description: bool = False) -> str:
    """`/describe`: the walkthrough block into the summary comment (created when there is none), or into
    the PR description between markers (the author's text stays as it is). Returns what changed."""
    from ..render.markdown import SUMMARY_MARKER
    from ..render.walkthrough import with_block

    if into_description:
        old = str(api.pull(number).get("body") or "")
        new = with_block(old, block)
        if new == old:
            return "unchanged"
        api.edit_pull(number, {"body": new})
        return "description updated"
    previous = own_summary(api.issue_comments(number), api.own_login())
    if previous is None:
        api.create_comment(number, f"{SUMMARY_MARKER}\n### prereview\n\n{block}")
        return "summary created"
    old = str(previous.get("body") or "")
    body = with_block(old, block)
    if body.strip() == old.strip():
        return "unchanged"
    api.edit_comment(int(previous["id"]), body)
    return "summary updated"
