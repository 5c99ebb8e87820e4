"""Posting comments on a GitHub PR: line comments as one COMMENT review (never APPROVE), file comments
one by one. On 422 the comments are re-validated against the diff GitHub has (`/pulls/{n}/files`) and
the rest posted; if GitHub still refuses, the batch is bisected, so one bad comment never sinks the
review: it comes back refused and the flow lists its finding in the summary."""

from __future__ import annotations

from collections.abc import Sequence

from ...change.diff import parse
from ..base import Comment, Posting
from .api import GitHubAPI
from .diff import patch_to_diff
from .placement import fits

REFUSED = "GitHub answered 422 (not a line of its diff)"


def post_review(api: GitHubAPI, number: int, head: str, counts: str, comments: Sequence[Comment]) -> Posting:
    """Line comments in one review (`counts`: the review's counts line), then file comments."""
    lines = [c for c in comments if not c.on_file]
    ok, bad, reviews = _batch(api, number, head, counts, lines, validate=True) if lines else ([], [], 0)
    for c in (c for c in comments if c.on_file):
        if _file_comment(api, number, head, c):
            ok.append(c)
        else:
            bad.append(c)
    return Posting(tuple(ok), tuple((c, REFUSED) for c in bad), reviews)


def _batch(
    api: GitHubAPI, number: int, head: str, counts: str, batch: list[Comment], *, validate: bool
) -> tuple[list[Comment], list[Comment], int]:
    from github import GithubException

    if not batch:
        return [], [], 0
    body = (
        f"**prereview** · {len(batch)} comment(s) on `{head[:12]}` · {counts}\n\n"
        "The summary comment has the overview."
    )
    try:
        api.create_review(
            number,
            {"commit_id": head, "event": "COMMENT", "body": body, "comments": [dict(c.where) for c in batch]},
        )
        return batch, [], 1
    except GithubException as exc:
        if exc.status != 422:
            raise
    if len(batch) == 1:
        return [], batch, 0
    if validate:
        # The diff GitHub holds may differ from ours (e.g. a local diff with other rename detection).
        truth = parse(patch_to_diff(api.files(number))[0])
        good = [c for c in batch if fits(truth, dict(c.where))]
        if len(good) < len(batch):
            ok, bad, n = _batch(api, number, head, counts, good, validate=False)
            return ok, bad + [c for c in batch if c not in good], n
    mid = len(batch) // 2
    ok1, bad1, n1 = _batch(api, number, head, counts, batch[:mid], validate=False)
    ok2, bad2, n2 = _batch(api, number, head, counts, batch[mid:], validate=False)
    return ok1 + ok2, bad1 + bad2, n1 + n2


def _file_comment(api: GitHubAPI, number: int, head: str, c: Comment) -> bool:
    from github import GithubException

    try:
        api.create_review_comment(number, {"commit_id": head, **dict(c.where)})
    except GithubException as exc:
        if exc.status != 422:
            raise
        return False
    return True
