"""The GitLab entry points' publisher: `bot/publish/flow.py` over `GitLabForge` (diff discussions,
suggestions, a file note when a line is refused, stale threads resolved, one summary note), and
`/describe`'s walkthrough."""

from __future__ import annotations

from typing import Any

from ..change.diff import Diff
from ..config import GitLabConfig, ReviewConfig
from ..forges.gitlab.forge import GitLabForge, first_note, is_summary_thread, ours
from ..progress import Progress
from ..render.markdown import SUMMARY_MARKER
from ..types import ChangeRequest, Review
from .flow import Options, PublishResult
from .flow import publish as publish_with


def set_walkthrough(api: Any, iid: int, block: str, *, into_description: bool = False) -> str:
    """`/describe`: the walkthrough block into the one summary note (created when there is none), or
    into the MR description between markers (the author's text stays as it is). Returns what changed."""
    from ..render.walkthrough import with_block

    if into_description:
        old = str(api.merge_request(iid).get("description") or "")
        new = with_block(old, block)
        if new == old:
            return "unchanged"
        api.update_merge_request(iid, {"description": new})
        return "description updated"
    own = getattr(api, "own_username", None)
    for d in ours(api.discussions(iid), own() if own is not None else None):  # never someone else's note
        if is_summary_thread(d):
            note = first_note(d)
            body = with_block(note.get("body", ""), block)
            if body.strip() == (note.get("body") or "").strip():
                return "unchanged"
            api.update_note(iid, int(note["id"]), body)
            return "summary updated"
    api.create_note(iid, f"{SUMMARY_MARKER}\n### prereview\n\n{block}")
    return "summary created"


def publish(
    api: GitLabForge,
    change: ChangeRequest,
    review: Review,
    cfg: GitLabConfig,
    *,
    progress: Progress | None = None,
    scope: Diff | None = None,
    review_cfg: ReviewConfig | None = None,
) -> PublishResult:
    """Post `review` (anchored on the MR's diff in `change`). `scope`: for an incremental review, the part
    of the diff that was re-reviewed; threads outside it stay open. `review_cfg`: its `filter_mode` and
    `max_comments_per_file` decide what may go inline."""
    if change.ref.number is None:
        raise ValueError("publish needs the merge request iid in change.ref.number")
    opts = Options(
        max_comments=cfg.max_discussions,
        file_comments=cfg.file_notes,
        file_fallback=cfg.file_notes,
        resolve_stale=cfg.resolve_stale,
        review=review_cfg or ReviewConfig(),
    )
    placement = api.placement(change, suggestions=cfg.suggestions)
    return publish_with(api, change, review, opts, scope=scope, placement=placement, progress=progress)
