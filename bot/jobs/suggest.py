"""A verified fix (whole new file texts) -> committable suggestions on the PR's lines, where they fit, and
posted on a forge that has them (`forges.base.SuggestsFixes`)."""

from __future__ import annotations

import difflib
from collections.abc import Callable

from ..change.diff import Diff, parse
from ..forges.base import Forge, SuggestsFixes
from ..render.markdown import fingerprints_in
from ..types import ChangeRequest, Finding


def suggestions(
    files: dict[str, str], head_text: Callable[[str], str | None], diff: Diff, evidence: str
) -> list[Finding] | None:
    """One finding per changed block, or None when any block touches lines outside the PR's diff (a
    suggestion can only replace lines the forge shows: then the caller posts the patch instead)."""
    out: list[Finding] = []
    for path, new_text in sorted(files.items()):
        old = (head_text(path) or "").splitlines()
        new = new_text.splitlines()
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
            if tag == "equal":
                continue
            if i1 == i2:  # a pure insertion: replace the line before it (or after, at the top) as well
                if i1 > 0:
                    i1, j1 = i1 - 1, j1 - 1
                elif old:
                    i2, j2 = 1, j2 + 1
                else:
                    return None
            lines = range(i1 + 1, i2 + 1)
            if not all(diff.has_line(path, n) for n in lines):
                return None
            out.append(
                Finding(
                    path=path,
                    line=i1 + 1,
                    end_line=i2 if i2 > i1 + 1 else None,
                    message="Verified fix for the tests this change broke.",
                    severity="medium",
                    category="bug",
                    source="fix",
                    rule_id="tests/fix",
                    suggestion="\n".join(new[j1:j2]),
                    verified=True,
                    evidence=evidence,
                    quote="\n".join(old[i1:i2]) + "\x1f" + "\n".join(new[j1:j2]),
                )
            )
    return out


def post(forge: Forge, number: int, change: ChangeRequest, findings: list[Finding], evidence: str) -> bool:
    """The fix as one review of committable suggestions on PR `number`; False when the forge has none or
    cannot place one of them (the caller posts the patch instead). Suggestions already on the PR (a
    retried job) are not posted again."""
    if not isinstance(forge, SuggestsFixes):
        return False
    diff = parse(change.diff_text)
    published = forge.published(number)
    posted = set(published.listed).union(*(fingerprints_in(c.body) for c in published.comments))
    placement = forge.placement(change)
    comments = [placement.on_line(f, diff) for f in findings if f.fingerprint not in posted]
    if any(c is None for c in comments):
        return False
    if not comments:
        return True  # a retried job: the suggestions are already there
    body = f"**prereview** · verified fix ({evidence}): commit the suggestions below."
    return forge.suggest(number, change.head_sha, body, [c for c in comments if c is not None])
