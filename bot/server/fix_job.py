"""The `/fix` job: clone the PR, run its tests at base and head in the sandbox and, when the change broke
them, deliver a patch that makes them pass (proposed by the model, kept only if verified).

Delivered as committable suggestions (GitHub, when every changed line is on the PR's diff), else as a
diff in the reply; with `patches.fix_mode: branch`, as a commit on `prereview/fix-<pr>-<sha>` and a draft
PR/MR into the PR's own branch (a PR from a fork, or a push the token may not make, falls back to the
reply, saying why).
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import replace
from pathlib import Path

from ..change import git
from ..change.diff import parse
from ..config import CONFIG_FILE, Config
from ..pipeline.run import LazyModel
from ..progress import Quiet
from ..render.escape import code
from ..render.escape import text as escape
from ..types import ChangeRequest, PrereviewError
from . import fix_branch, repo_config
from .forge_session import ForgeSession
from .jobs import Job
from .suggest import suggestions

log = logging.getLogger("prereview.worker")


def run(job: Job, forge: ForgeSession, server_cfg: Config, model: LazyModel) -> None:
    from ..cli.fix import find_fix, unified_diff
    from ..render.markdown import fence_for

    change = forge.fetch()
    with tempfile.TemporaryDirectory(prefix="prereview-fix-") as tmp:
        repo = forge.clone([change.base_sha, change.head_sha], Path(tmp) / "repo")
        cfg, _ = repo_config.load(
            server_cfg, lambda: git.show(repo, change.base_sha, CONFIG_FILE), change.base_sha
        )
        files, evidence = find_fix(replace(change, workdir=repo), cfg, model, Quiet())
        if files is None:
            forge.reply("No verified fix found: no candidate patch made the tests pass.", job.comment_id)
            return
        if not files:
            forge.reply(
                "The tests pass at this head (or fail at the base too): nothing to fix.", job.comment_id
            )
            return
        note = ""
        if cfg.patches.fix_mode == "branch":
            done, note = to_branch(job, forge, change, repo, files, evidence)
            if done is not None:
                forge.reply(done, job.comment_id)
                return
        patch = unified_diff(repo, change.head_sha, files)
        found = suggestions(
            files, lambda p: git.show(repo, change.head_sha, p), parse(change.diff_text), evidence
        )
    lead = f"{note}\n\n" if note else ""
    if found and forge.suggest(change, found, evidence):
        forge.reply(f"{lead}Posted a verified fix as suggestions ({evidence}).", job.comment_id)
        return
    fence = fence_for(patch)
    forge.reply(f"{lead}Verified fix ({evidence}):\n\n{fence}diff\n{patch}{fence}", job.comment_id)


def to_branch(
    job: Job, forge: ForgeSession, change: ChangeRequest, repo: Path, files: dict[str, str], evidence: str
) -> tuple[str | None, str]:
    """(reply, "") once the fix is on a branch; (None, note) when it must be posted in the reply."""
    head = forge.head_branch()
    if not head.same_repo or not head.ref:
        return None, f"The {forge.kind}'s branch is in a fork prereview cannot push to: the fix is below."
    branch = fix_branch.branch_name(job.number, change.head_sha)
    ref = f"{'#' if forge.kind == 'PR' else '!'}{job.number}"
    title = f"prereview: fix the tests broken in {ref}"
    try:
        sha = fix_branch.commit(repo, change.head_sha, files, f"{title}\n\nVerified: {evidence}\n")
        forge.push(repo, sha, branch)
    except PrereviewError as exc:
        log.warning("%s: %s", job.pr_key, exc)
        return None, f"Could not push `{branch}` ({escape(str(exc))}): the fix is below."
    body = (
        f"A verified fix for {ref} ({evidence}), on top of `{change.head_sha[:12]}`. "
        f"Merging this {forge.kind} adds it to {code(head.ref)}."
    )
    try:
        url = forge.open_draft(branch, head.ref, title, body)
    except PrereviewError as exc:
        log.warning("%s: %s", job.pr_key, exc)
        return (
            f"Pushed a verified fix ({evidence}) to `{branch}`, but could not open a draft {forge.kind}: "
            f"{escape(str(exc))}",
            "",
        )
    return f"Opened a draft {forge.kind} with a verified fix ({evidence}): {url}", ""
