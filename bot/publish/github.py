"""The GitHub entry points' publisher: `bot/publish/flow.py` over `GitHubForge`, plus the summary's own
commands (`/describe`, `/pause`). What goes where on GitHub: `forges/github/` (placement, review
posting with the 422 fallback, the summary's state markers)."""

from __future__ import annotations

from ..change.diff import Diff
from ..config import ReviewConfig
from ..forges.github.api import GitHubAPI, PostedComment
from ..forges.github.forge import GitHubForge
from ..forges.github.summary import PAUSED_MARKER, SummaryState
from ..render.markdown import SUMMARY_MARKER, fingerprints_in
from ..types import ChangeRef, ChangeRequest, Review
from .flow import Options, PublishResult, publish


class GitHubPublisher:
    def __init__(
        self,
        api: GitHubAPI,
        number: int,
        *,
        max_comments: int = 30,
        bot_logins: frozenset[str] = frozenset(),
        review_cfg: ReviewConfig | None = None,
    ) -> None:
        """`review_cfg`: its `filter_mode` and `max_comments_per_file` decide what may go inline."""
        self.api, self.number, self.max_comments = api, number, max_comments
        self.forge = GitHubForge(api, bot_logins=bot_logins)
        self.review_cfg = review_cfg or ReviewConfig()
        self.threads_resolved = 0  # review threads resolved over GraphQL by the last publish

    def ours(self) -> list[PostedComment]:
        """Our live (not yet resolved) review comments."""
        return self.forge.ours(self.number)

    def summary(self) -> SummaryState:
        return self.forge.summary(self.number)

    def posted(self) -> set[str]:
        """Fingerprints already on the PR (inline comments and the summary)."""
        fps = set(self.summary().fingerprints)
        for c in self.ours():
            fps |= fingerprints_in(c.body)
        return fps

    def publish(
        self,
        review: Review,
        diff: Diff,
        *,
        scope: Diff | None = None,
        state: SummaryState | None = None,
        title: str = "prereview",
    ) -> PublishResult:
        """Post `review` (whose findings were anchored on `diff`, the PR's base...head diff).

        `scope`: for an incremental review, the part of the diff that was re-reviewed; earlier comments
        outside it are kept (not resolved) and earlier summary entries carried over. `state`: the summary
        as just read (saves a request).
        """
        change = ChangeRequest(
            ChangeRef("github", self.api.repo_name, number=self.number), "", review.head, ""
        )
        opts = Options(max_comments=self.max_comments, title=title, review=self.review_cfg)
        published = self.forge.published(self.number, state)
        res = publish(self.forge, change, review, opts, diff=diff, scope=scope, published=published)
        res.notes += tuple(self.forge.thread_notes)
        self.threads_resolved = self.forge.threads_resolved
        return res

    def set_walkthrough(self, block: str) -> None:
        """`/describe`: the walkthrough block into the one summary comment (created when there is none)."""
        from ..render.walkthrough import with_block

        state = self.summary()
        if state.comment_id is None:
            self.api.create_issue_comment(self.number, f"{SUMMARY_MARKER}\n### prereview\n\n{block}")
            return
        body = with_block(state.body, block)
        if body.strip() != state.body.strip():
            self.api.edit_issue_comment(state.comment_id, body)

    def set_description(self, block: str) -> None:
        """`/describe --update`: the block into the PR description; the author's text stays as it is."""
        from ..render.walkthrough import with_block

        pr = self.api.pull(self.number)
        body = pr.body or ""
        new = with_block(body, block)
        if new != body:
            self.api.update_pull(self.number, {"body": new})

    def set_paused(self, paused: bool) -> None:
        """`/pause` and `/resume`: remembered in the summary comment."""
        state = self.summary()
        if state.comment_id is None:
            if paused:
                self.api.create_issue_comment(
                    self.number,
                    f"{SUMMARY_MARKER}\n### prereview\n\nAutomatic reviews "
                    f"are paused (`/resume` to resume).\n{PAUSED_MARKER}\n",
                )
            return
        body = state.body.replace(PAUSED_MARKER, "").rstrip("\n") + "\n"
        if paused:
            body += PAUSED_MARKER + "\n"
        if body.strip() != state.body.strip():
            self.api.edit_issue_comment(state.comment_id, body)
