"""The GitLab forge: a merge request fetched from the API alone, or checked out in CI.

`GitLabForge` is the API client (`api.py`) plus what a review needs from a forge: the change with its
diff as GitLab computes it, and a CI checkout where base and head are reachable.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...change import git
from ...render.markdown import fingerprints_in, is_summary
from ...types import ChangeRef, ChangeRequest, PrereviewError
from ..base import Comment, HeadBranch, PermissionDenied, Posted, Posting, Published, Rejected
from .api import DiffRefs, GitLabAPI, quoted_project
from .placement import GitLabPlacement

if TYPE_CHECKING:
    from ...progress import Progress


class GitLabForge(GitLabAPI):
    """A GitLab project: `forges.base.Forge`, `ResolvesThreads`, `OpensDraftFixes` (`number`: the MR iid)."""

    name = "GitLab"

    def diff_text(self, iid: int) -> str:
        """The MR's unified diff from the API alone (/diffs, or /changes before GitLab 15.7)."""
        import gitlab.exceptions as glexc

        path = f"/projects/{quoted_project(self.project)}/merge_requests/{iid}/diffs"
        try:
            entries = self._call(
                "list MR diffs", self._client().http_list, path, get_all=True, per_page=100, expect=(404,)
            )
        except glexc.GitlabError as exc:
            if exc.response_code != 404:
                raise
            changes = self._call("get MR changes", self._mr(iid).changes, access_raw_diffs=True)
            entries = changes["changes"] if isinstance(changes, dict) else []
        return "".join(_git_diff_entry(e) for e in entries if isinstance(e, dict))

    def fetch(self, ref: ChangeRef) -> ChangeRequest:
        """A ChangeRequest from the API alone (no checkout): what a webhook server reviews."""
        if ref.number is None:
            raise PrereviewError("a GitLab change needs the merge request iid")
        mr = self.merge_request(ref.number)
        refs = mr.get("diff_refs") or {}
        if not refs.get("head_sha"):
            raise PrereviewError(
                f"merge request !{ref.number} has no diff yet (diff_refs is empty); retry shortly"
            )
        return ChangeRequest(
            ref=ref,
            base_sha=refs["base_sha"],
            head_sha=refs["head_sha"],
            diff_text=self.diff_text(ref.number),
            title=mr.get("title") or "",
            body=mr.get("description") or "",
            author=(mr.get("author") or {}).get("username", ""),
            url=mr.get("web_url") or "",
            labels=tuple(str(x) for x in (mr.get("labels") or []) if x),
        )

    @staticmethod
    def checkout(change: ChangeRequest, dest: Path, progress: Progress | None = None) -> Path:
        """`dest` is the CI checkout: make sure base and head are reachable there (shallow clones)."""
        for label, sha in (("base", change.base_sha), ("head", change.head_sha)):
            if _has(dest, sha):
                continue
            if progress is not None:
                progress.message(
                    f"{label} commit {sha[:12]} is not in the checkout (shallow clone); fetching it"
                )
            git.git(dest, "fetch", "--no-tags", "--quiet", "--depth=1", "origin", sha, check=False)
            if not _has(dest, sha):
                raise PrereviewError(
                    f"{label} commit {sha[:12]} is not in the checkout and could not be fetched; "
                    "set GIT_DEPTH: 0 (or a larger GIT_DEPTH) for the prereview job"
                )
        return dest

    # -- publishing (forges.base.Forge) -----------------------------------------------------------

    def placement(self, change: ChangeRequest, *, suggestions: bool = True) -> GitLabPlacement:
        iid = change.ref.number
        assert iid is not None
        refs = self.diff_refs(iid, change.head_sha)
        if refs.head_sha != change.head_sha or refs.base_sha != change.base_sha:
            # The reviewed diff is not an MR version: GitLab diffs start..head, so start = base is ours.
            refs = DiffRefs(change.base_sha, change.base_sha, change.head_sha)
        return GitLabPlacement(refs, suggestions=suggestions)

    def published(self, number: int) -> Published:
        discussions = ours(self.discussions(number), self.own_username())
        comments = tuple(
            _posted(d)
            for d in discussions
            if not is_summary_thread(d) and fingerprints_in(str(first_note(d).get("body") or ""))
        )
        found = next((d for d in discussions if is_summary_thread(d)), None)
        return Published(comments, None if found is None else _posted(found))

    def post_review(self, number: int, head: str, body: str, comments: Sequence[Comment]) -> Posting:
        """Each comment is its own discussion; a position GitLab refuses (400) comes back refused."""
        posted: list[Comment] = []
        refused: list[tuple[Comment, str]] = []
        for c in comments:
            try:
                self.create_discussion(number, c.body, dict(c.where["position"]))
                posted.append(c)
            except Rejected as exc:
                f = c.finding
                refused.append((c, f"{f.path} (file): {exc}" if c.on_file else f"{f.path}:{f.line}: {exc}"))
        lines = sum(1 for c, _ in refused if not c.on_file)
        why = f"GitLab refused the diff position of {lines} finding(s)"
        notes = (f"{why}; they are on their file or listed here.",) if lines else ()
        return Posting(tuple(posted), tuple(refused), len(posted), notes)

    def upsert_summary(self, number: int, body: str, previous: Posted | None) -> str:
        if previous is None:  # read again: another run may have made it since
            previous = self.published(number).summary
        if previous is None:
            self.create_note(number, body)
            return "created"
        if same_summary(previous.body, body):
            return "unchanged"
        self.update_note(number, int(previous.id), body)
        return "updated"

    def reply(self, number: int, body: str, thread: str | None = None) -> None:
        if thread is None:
            self.create_note(number, body)
        else:
            self.reply_to_discussion(number, thread, body)

    def resolve(self, number: int, comment: Posted, head: str) -> None:
        try:
            self.resolve_discussion(number, comment.thread or comment.id)
        except PermissionDenied:  # resolving needs the Developer role; posting does not
            raise PermissionDenied(
                "Outdated prereview threads stay open: the token's role may not resolve threads (Developer)."
            ) from None

    def head_branch(self, number: int) -> HeadBranch:
        mr = self.merge_request(number)
        same = mr.get("source_project_id") == mr.get("target_project_id")
        return HeadBranch(str(mr.get("source_branch") or ""), same)

    def open_draft(self, branch: str, target: str, title: str, body: str) -> str:
        """A draft MR ("Draft: " title) from `branch` into `target`; its address."""
        mr = self.create_merge_request(
            {
                "source_branch": branch,
                "target_branch": target,
                "title": f"Draft: {title}",
                "description": body,
                "remove_source_branch": True,
            }
        )
        return str(mr.get("web_url") or "")


def first_note(d: dict[str, Any]) -> dict[str, Any]:
    notes = d.get("notes") or [{}]
    return notes[0] if isinstance(notes[0], dict) else {}


def is_summary_thread(d: dict[str, Any]) -> bool:
    return is_summary(first_note(d).get("body") or "")


def ours(discussions: list[dict[str, Any]], own: str | None) -> list[dict[str, Any]]:
    """The discussions the bot's user started (`own`: the token's username; None: no filter). Markers in
    anyone else's notes are text, never state."""
    if own is None:
        return discussions
    return [d for d in discussions if (first_note(d).get("author") or {}).get("username") == own]


def _posted(d: dict[str, Any]) -> Posted:
    """A discussion as the flow sees it: its first note, where it sits, whether it can still be resolved."""
    note = first_note(d)
    body = str(note.get("body") or "")
    pos = note.get("position") or {}
    new, old = pos.get("new_line"), pos.get("old_line")
    return Posted(
        id=str(note.get("id") or ""),
        body=body,
        path=str(pos.get("new_path") or pos.get("old_path") or ""),
        line=int(new) if new is not None else (int(old) if old is not None else None),
        side="LEFT" if new is None and old is not None else "RIGHT",
        thread=str(d.get("id") or ""),
        resolved=not note.get("resolvable") or bool(note.get("resolved")),
    )


_SECONDS = re.compile(r"\b\d+(?:\.\d+)?s\b")


def same_summary(a: str, b: str) -> bool:
    """Equal apart from timings, so an identical re-run edits nothing (a new head sha still counts)."""
    return _SECONDS.sub("", a).strip() == _SECONDS.sub("", b).strip()


def _has(repo: Path, sha: str) -> bool:
    try:
        git.git(repo, "cat-file", "-e", f"{sha}^{{commit}}")
    except git.GitError:
        return False
    return True


def _git_diff_entry(e: dict[str, Any]) -> str:
    """One /diffs entry as `git diff` prints it, so bot.diff.parse reads API and local diffs alike."""
    old, new = e.get("old_path") or e.get("new_path"), e.get("new_path") or e.get("old_path")
    body = e.get("diff") or ""
    head = [f"diff --git a/{old} b/{new}"]
    if e.get("new_file"):
        head.append(f"new file mode {e.get('b_mode') or '100644'}")
    elif e.get("deleted_file"):
        head.append(f"deleted file mode {e.get('a_mode') or '100644'}")
    elif e.get("renamed_file"):
        head += [f"rename from {old}", f"rename to {new}"]
    if not body.strip():
        return "\n".join(head) + "\n"
    if body.startswith("@@"):  # /diffs without unidiff=true omits the file headers
        src = "/dev/null" if e.get("new_file") else f"a/{old}"
        dst = "/dev/null" if e.get("deleted_file") else f"b/{new}"
        head += [f"--- {src}", f"+++ {dst}"]
    return "\n".join(head) + "\n" + (body if body.endswith("\n") else body + "\n")
