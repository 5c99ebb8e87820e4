"""`prereview fix`: run the tests; if the change broke them, propose and verify a patch; print or apply it."""

from __future__ import annotations

import difflib
import sys
import time
from pathlib import Path
from typing import Any

import click

from ..types import PrereviewError
from .options import config_options


@click.command("fix")
@click.option("--repo", type=click.Path(path_type=Path), default=".", help="Git repository (default: here).")
@click.option("--base", help="Base revision (default: merge-base with the upstream/default branch).")
@click.option("--apply", "apply_", is_flag=True, help="Write the verified fix into the working tree.")
@click.option("--output", "-o", type=click.Path(path_type=Path), help="Write the fix as a unified diff here.")
@config_options("Config file (default: .prereview.yml at the base revision).", fail_level=False, knobs=False)
def command(
    repo: Path,
    base: str | None,
    apply_: bool,
    output: Path | None,
    config_file: Path | None,
    overrides: dict[str, Any],
) -> None:
    """Fix the tests HEAD broke (compared with BASE) with a patch proven by the tests.

    Runs the project's tests at base and head in the sandbox. When the change broke tests, asks the model
    for patches (single shots on a temperature ladder, then a bounded agent loop) and keeps one only if the
    tests pass with it and no test file was touched. Prints the fix as a unified diff (exit 0), or applies
    it with --apply; exit 1 when no verified fix was found.
    """
    from ..forges.local import LocalForge
    from ..pipeline.run import LazyModel, load_config
    from ..types import ChangeRef
    from .ui import console_progress

    change = LocalForge().fetch(ChangeRef("local", str(repo), base, None))
    cfg = load_config(change.workdir, change.base_sha, config_file=config_file, overrides=overrides)
    with console_progress(enabled=sys.stderr.isatty()) as progress:
        files, evidence = find_fix(change, cfg, LazyModel(cfg, progress), progress)
    if files is None:
        sys.exit(1)
    if not files:
        return
    assert change.workdir is not None
    patch = unified_diff(change.workdir, change.head_sha, files)
    if output is not None:
        output.write_text(patch, encoding="utf-8")
        click.echo(f"wrote the fix to {output} ({evidence})", err=True)
    if apply_:
        apply_files(change.workdir, change.head_sha, files)
        click.echo(f"applied the fix to {', '.join(files)} ({evidence})", err=True)
    if output is None and not apply_:
        click.echo(patch, nl=False)
        click.echo(f"verified: {evidence}", err=True)


def find_fix(change: Any, cfg: Any, model_factory: Any, progress: Any) -> tuple[dict[str, str] | None, str]:
    """({path: new text}, evidence); ({}, "") when nothing is broken; (None, "") when no fix was verified."""
    from ..change import git
    from ..evidence import testrun
    from ..evidence.runs import run_tests
    from ..patches import agent
    from ..patches.verify import Patcher

    runs = run_tests(change, cfg, cache_dir=testrun.default_cache_dir(), progress=progress)
    for note in runs.notes:
        click.echo(f"note: {note}", err=True)
    if runs.runner is None or runs.head is None or runs.base is None:
        raise PrereviewError(
            "no tests to run: set test_command in .prereview.yml (and tests must not be off)"
        )
    if runs.breakage is None:
        state = "passing" if runs.head.ok else "failing at base too"
        click.echo(
            f"tests: head {runs.head.summary()} ({state}); the change breaks no test, nothing to fix",
            err=True,
        )
        return {}, ""
    finding = runs.breakage_findings(change)[0]
    click.echo(f"broken: {finding.path}:{finding.line}: {finding.message}", err=True)
    deadline = time.monotonic() + cfg.patches.budget_seconds
    stage = Patcher(change, cfg, runs)
    verdict = stage.fix(finding, model_factory, progress, deadline)
    if verdict is not None:
        text = git.show(change.workdir, change.head_sha, verdict.patch.path) or ""
        return {verdict.patch.path: verdict.patch.apply(text)}, verdict.reason
    click.echo(f"no single-shot patch verified ({len(stage.verdicts)} candidate(s) tried)", err=True)
    if cfg.patches.agent_steps <= 0:
        return None, ""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="prereview-agent-") as tmp:
        ws = agent.Workspace(testrun.export_tree(change.workdir, change.head_sha, Path(tmp) / "work"))
        task = (
            f"{finding.message}\n\nThe change (diff):\n{change.diff_text[:3000]}\n\n"
            f"Failing test output (end):\n{runs.head.output[-1500:]}"
        )
        result = agent.run(
            model_factory(),
            ws,
            runs.runner,
            head=runs.head,
            breakage=runs.breakage,
            task=task,
            near=(finding.path, finding.line),
            max_steps=cfg.patches.agent_steps,
            log=lambda m: click.echo(f"agent {m}", err=True),
        )
    if not result.ok:
        click.echo(f"the agent found no verified fix in {result.steps} step(s)", err=True)
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
