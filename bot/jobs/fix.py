"""The `/fix` job: clone the PR, run its tests at base and head in the sandbox and, when the change broke
them, deliver a patch that makes them pass (proposed by the model, kept only if verified).

Delivered as committable suggestions (GitHub, when every changed line is on the PR's diff), else as a
diff in the reply; with `patches.fix_mode: branch`, as a commit on `prereview/fix-<pr>-<sha>` and a draft
PR/MR into the PR's own branch (a PR from a fork, or a push the token may not make, falls back to the
reply, saying why).
"""

from __future__ import annotations

import difflib
import logging
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..change import git
from ..change.diff import parse
from ..config import CONFIG_FILE, Config
from ..pipeline.run import LazyModel
from ..progress import Quiet
from ..render.escape import code
from ..render.escape import text as escape
from ..types import ChangeRequest, PrereviewError
from . import fix_branch, repo_config
from .job import Job
from .session import ForgeSession, JobState
from .suggest import suggestions

log = logging.getLogger("prereview.worker")


def fix(job: Job, forge: ForgeSession, server_cfg: Config, model: LazyModel, state: JobState) -> None:
    from ..render.markdown import fence_for

    change = forge.fetch()
    with tempfile.TemporaryDirectory(prefix="prereview-fix-") as tmp:
        repo = forge.clone([change.base_sha, change.head_sha], Path(tmp) / "repo")
        cfg, _ = repo_config.load(
            server_cfg, lambda: git.show(repo, change.base_sha, CONFIG_FILE), change.base_sha
        )

        def say(line: str) -> None:
            log.info("%s: %s", job.pr_key, line)

        files, evidence = find_fix(replace(change, workdir=repo), cfg, model, Quiet(), say)
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


def find_fix(
    change: ChangeRequest,
    cfg: Config,
    model_factory: Any,
    progress: Any,
    say: Callable[[str], None] = lambda _: None,
) -> tuple[dict[str, str] | None, str]:
    """({path: new text}, evidence); ({}, "") when nothing is broken; (None, "") when no fix was verified.
    `say` gets one line per step (the CLI prints them)."""
    from ..change import git
    from ..change.diff import parse
    from ..evidence import testrun
    from ..patches import agent
    from ..patches.verify import PatchStage

    workdir = change.workdir
    if workdir is None:
        raise PrereviewError("the change has no checkout to run its tests in")
    stage = PatchStage(change, cfg, cache_dir=testrun.default_cache_dir())
    stage.start(progress)
    for note in stage.notes:
        say(f"note: {note}")
    if stage.runner is None or stage.head is None or stage.base is None:
        raise PrereviewError(
            "no tests to run: set test_command in .prereview.yml (and tests must not be off)"
        )
    if stage.breakage is None:
        state = "passing" if stage.head.ok else "failing at base too"
        say(f"tests: head {stage.head.summary()} ({state}); the change breaks no test, nothing to fix")
        return {}, ""
    diff = parse(change.diff_text)
    finding = stage.breakage_findings(diff)[0]
    say(f"broken: {finding.path}:{finding.line}: {finding.message}")
    deadline = time.monotonic() + cfg.patches.budget_seconds
    verdict = stage.fix(finding, model_factory, progress, deadline)
    if verdict is not None:
        text = git.show(workdir, change.head_sha, verdict.patch.path) or ""
        return {verdict.patch.path: verdict.patch.apply(text)}, verdict.reason
    say(f"no single-shot patch verified ({len(stage.verdicts)} candidate(s) tried)")
    if cfg.patches.agent_steps <= 0:
        return None, ""
    with tempfile.TemporaryDirectory(prefix="prereview-agent-") as tmp:
        ws = agent.Workspace(testrun.export_tree(workdir, change.head_sha, Path(tmp) / "work"))
        task = (
            f"{finding.message}\n\nThe change (diff):\n{change.diff_text[:3000]}\n\n"
            f"Failing test output (end):\n{stage.head.output[-1500:]}"
        )
        result = agent.run(
            model_factory(),
            ws,
            stage.runner,
            head=stage.head,
            breakage=stage.breakage,
            task=task,
            near=(finding.path, finding.line),
            max_steps=cfg.patches.agent_steps,
            log=lambda m: say(f"agent {m}"),
        )
    if not result.ok:
        say(f"the agent found no verified fix in {result.steps} step(s)")
        return None, ""
    return result.files, result.evidence or ""


def unified_diff(repo: Path, head: str, files: dict[str, str]) -> str:
    from ..change import git

    out: list[str] = []
    for path, new in sorted(files.items()):
        old = git.show(repo, head, path) or ""
        out += difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
        )
    return "".join(out)


def apply_files(repo: Path, head: str, files: dict[str, str]) -> None:
    """Write the fixed files, refusing to overwrite local edits made since head."""
    from .. import fsguard
    from ..change import git

    for path in files:  # fsguard: never through a symlink the change (or anyone) put in the working tree
        current = fsguard.read_text(repo, path)
        if current != git.show(repo, head, path):
            raise PrereviewError(
                f"{path} has local changes since {head[:12]}; commit or stash them, or use --output"
            )
    for path, text in files.items():
        fsguard.write_text(repo, path, text)
