"""The GitHub forge: a pull request fetched through the REST API, optionally with a local checkout.

`GitHubForge.fetch` works from the API alone (PR metadata + the per-file patches of
`GET /pulls/{n}/files`), so a webhook server can review without a checkout. When a workspace holds a
checkout where both the base and the head are reachable (and the head is checked out), the local git
diff drives the review and the workspace becomes `workdir`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ...change import git
from ...render.markdown import fingerprints_in
from ...types import ChangeRef, ChangeRequest, PrereviewError
from ..base import Comment, HeadBranch, Posted, Posting, Published
from .api import GitHubAPI, PostedComment
from .diff import patch_to_diff
from .graphql import GraphQLFailure, ReviewThread
from .placement import GitHubPlacement
from .review import post_review
from .summary import (
    RESOLVED_MARKER,
    SummaryState,
    is_bot_login,
    resolved_body,
    state_of,
    summary_state,
    with_state,
)


class GitHubForge:
    """A PR's repository on GitHub: `forges.base.Forge`, `ResolvesThreads`, `KeepsState`, `SuggestsFixes`,
    `OpensDraftFixes`.

    `bot_logins`: accounts whose comments are the bot's besides `*[bot]` (a personal access token's user).
    """

    name = "GitHub"

    def __init__(
        self, api: GitHubAPI, *, workspace: Path | None = None, bot_logins: frozenset[str] = frozenset()
    ) -> None:
        self.api = api
        self.workspace = workspace
        self.bot_logins = frozenset(x.lower() for x in bot_logins)
        self.missing_patches: list[str] = []
        self.threads_resolved = 0  # review threads resolved over GraphQL
        self.thread_notes: list[str] = []
        self._threads: list[ReviewThread] | None = None

    def fetch(self, ref: ChangeRef) -> ChangeRequest:
        if ref.number is None:
            raise PrereviewError("no pull request number; pass --pr N or run on a pull_request event")
        pr = self.api.pull(ref.number)
        head, base = pr.head.sha, pr.base.sha
        meta = ChangeRequest(
            ref=ref,
            base_sha=base,
            head_sha=head,
            diff_text="",
            title=pr.title or "",
            body=pr.body or "",
            author=pr.user.login if pr.user else "",
            url=pr.html_url or "",
            labels=tuple(label.name for label in (pr.labels or []) if label.name),
        )
        if not self._head_checked_out(head):
            diff_text, self.missing_patches = patch_to_diff(self.api.files(ref.number))
            return replace(meta, diff_text=diff_text)
        try:
            merge_base = git.git(self.workspace, "merge-base", base, head).strip()  # type: ignore[arg-type]
        except git.GitError:  # a shallow clone: the API's diff, the checkout still gives file context
            diff_text, self.missing_patches = patch_to_diff(self.api.files(ref.number))
            return replace(meta, diff_text=diff_text, workdir=self.workspace)
        # GitHub shows base...head (three dots): the diff from the merge base, so lines match its diff.
        diff_text = git.diff(self.workspace, merge_base, head)  # type: ignore[arg-type]
        return replace(meta, base_sha=merge_base, diff_text=diff_text, workdir=self.workspace)

    def _head_checked_out(self, head: str) -> bool:
        ws = self.workspace
        if ws is None or not (ws / ".git").exists():
            return False
        try:
            return git.git(ws, "rev-parse", "HEAD").strip() == head
        except git.GitError:
            return False

    def local_diff(self, old: str, new: str) -> str | None:
        """`old..new` from the workspace (incremental review); None when either is not reachable there."""
        if self.workspace is None or not (self.workspace / ".git").exists():
            return None
        try:
            return git.diff(
                self.workspace, git.resolve(self.workspace, old), git.resolve(self.workspace, new)
            )
        except PrereviewError:
            return None

    # -- publishing (forges.base.Forge) -----------------------------------------------------------
    def placement(self, change: ChangeRequest) -> GitHubPlacement:
        return GitHubPlacement()

    def ours(self, number: int) -> list[PostedComment]:
        """The bot's live (not yet resolved) review comments."""
        return [
            c
            for c in self.api.review_comments(number)
            if fingerprints_in(c.body)
            and RESOLVED_MARKER not in c.body
            and is_bot_login(c.login, self.bot_logins)
        ]

    def summary(self, number: int) -> SummaryState:
        return summary_state(self.api.issue_comments(number), self.bot_logins)

    def published(self, number: int, state: SummaryState | None = None) -> Published:
        """`state`: the summary as just read (saves a request)."""
        self._threads = None  # read again when this publish resolves one
        self.threads_resolved, self.thread_notes = 0, []
        state = state if state is not None else self.summary(number)
        comments = tuple(Posted(str(c.id), c.body, c.path, c.line) for c in self.ours(number))
        summary = None if state.comment_id is None else Posted(str(state.comment_id), state.body)
        return Published(comments, summary, frozenset(state.fingerprints))

    def post_review(self, number: int, head: str, body: str, comments: Sequence[Comment]) -> Posting:
        return post_review(self.api, number, head, body, comments)

    def upsert_summary(self, number: int, body: str, previous: Posted | None) -> str:
        """Edit the summary in place; create it only when there is none even now. Two runs at once (a push
        review and a comment command) both read "none" at their start: the summary is read again before
        creating, and if one appeared meanwhile anyway, every run adopts the oldest and removes its own."""
        if previous is None:
            state = self.summary(number)
            if state.comment_id is None:
                created = int(self.api.create_issue_comment(number, body)["id"])
                state = self.summary(number)
                if state.comment_id is None or state.comment_id == created:
                    return "created"
                self.api.delete_issue_comment(created)
            previous = Posted(str(state.comment_id), state.body)
        if previous.body.strip() == body.strip():
            return "unchanged"
        self.api.edit_issue_comment(int(previous.id), body)
        return "updated"

    def reply(self, number: int, body: str, thread: str | None = None) -> None:
        if thread is None:
            self.api.create_issue_comment(number, body)
        else:
            self.api.reply_to_review_comment(number, int(thread), body)

    # -- abilities ----------------------------------------------------------------------------------
    def with_state(self, body: str, head: str, carried: set[str], previous: Posted | None) -> str:
        paused = previous is not None and state_of(int(previous.id), previous.body).paused
        return with_state(body, head, carried, paused)

    def resolve(self, number: int, comment: Posted, head: str) -> None:
        """Mark the comment resolved in its text (the edit says "Resolved"), then resolve its thread
        (GraphQL `resolveReviewThread`) so GitHub folds it; a token that may not resolve threads is a
        note (`thread_notes`), the edit stands."""
        from github import GithubException

        self.api.edit_review_comment(int(comment.id), resolved_body(comment.body, head))
        if self.thread_notes:
            return  # GraphQL failed once in this publish: the edits go on, the threads stay
        try:
            if self._threads is None:
                self._threads = self.api.review_threads(number)
            for t in self._threads:
                if t.first_comment == int(comment.id) and not t.resolved:
                    self.api.resolve_review_thread(t.id)
                    self.threads_resolved += 1
        except (GraphQLFailure, GithubException) as exc:
            self.thread_notes.append(f"could not resolve review threads over GraphQL ({str(exc)[:120]})")

    def suggest(self, number: int, head: str, body: str, comments: Sequence[Comment]) -> bool:
        """One review of committable suggestions; False when GitHub cannot place one of them (422)."""
        from github import GithubException

        data = {
            "commit_id": head,
            "event": "COMMENT",
            "body": body,
            "comments": [dict(c.where) for c in comments],
        }
        try:
            self.api.create_review(number, data)
        except GithubException as exc:
            if exc.status != 422:
                raise
            return False
        return True

    def head_branch(self, number: int) -> HeadBranch:
        head = self.api.pull(number).head
        full_name = head.repo.full_name if head.repo is not None else ""
        return HeadBranch(head.ref, full_name.lower() == self.api.repo_name.lower())

    def open_draft(self, branch: str, target: str, title: str, body: str) -> str:
        from github import GithubException

        try:
            pr = self.api.create_pull(
                {"title": title, "head": branch, "base": target, "body": body, "draft": True}
            )
        except GithubException as exc:
            data = exc.data if isinstance(exc.data, dict) else {}
            errors = [e.get("message", "") for e in data.get("errors", []) if isinstance(e, dict)]
            why = "; ".join(x for x in [str(data.get("message", "")), *errors] if x)
            raise PrereviewError(f"GitHub answered {exc.status} ({why or 'no message'})") from None
        return str(pr.get("html_url") or "")
