"""`prereview fix`: run the tests; if the change broke them, propose and verify a patch; print or apply it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

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
    from ..jobs.fix import apply_files, find_fix, unified_diff
    from ..pipeline.run import LazyModel, load_config
    from ..types import ChangeRef
    from .ui import console_progress

    change = LocalForge().fetch(ChangeRef("local", str(repo), base, None))
    cfg = load_config(change.workdir, change.base_sha, config_file=config_file, overrides=overrides)
    with console_progress(enabled=sys.stderr.isatty()) as progress:
        files, evidence = find_fix(change, cfg, LazyModel(cfg, progress), progress, _say)
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


def _say(line: str) -> None:
    click.echo(line, err=True)
