"""The `prereview` command line: review | models | config, plus lazily loaded forge/server commands."""

from __future__ import annotations

import importlib
import importlib.util
import os
import signal
import sys
import tempfile
import threading
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from .. import __version__
from ..types import PrereviewError
from .options import config_options

# name -> module exposing `command` (or `module:attribute`); loaded only when invoked, listed only when the
# module exists.
LAZY_COMMANDS = {
    "github": "bot.cli.ci:github",
    "gitlab": "bot.cli.ci:gitlab",
    "gitea": "bot.cli.ci:gitea",
    "bitbucket": "bot.cli.ci:bitbucket",
    "serve": "bot.cli.serve",
    "fix": "bot.cli.fix",
    "worker": "bot.cli.worker",
    "jobs": "bot.cli.jobs",
}


def _module(target: str) -> str:
    return target.partition(":")[0]


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        lazy = [n for n, m in LAZY_COMMANDS.items() if importlib.util.find_spec(_module(m)) is not None]
        return sorted([*super().list_commands(ctx), *lazy])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS and importlib.util.find_spec(_module(LAZY_COMMANDS[name])) is not None:
            module, _, attr = LAZY_COMMANDS[name].partition(":")
            return getattr(importlib.import_module(module), attr or "command")  # type: ignore[no-any-return]
        return super().get_command(ctx, name)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="prereview")
def cli() -> None:
    """prereview: review a pull/merge request with a small local model, before a human does."""


@cli.command()
@click.option("--repo", type=click.Path(path_type=Path), default=".", help="Git repository (default: here).")
@click.option("--base", help="Base revision (default: merge-base with the upstream/default branch).")
@click.option("--head", help="Head revision (default: HEAD).")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "markdown", "json", "rdjson", "sarif"]), default="text"
)
@click.option(
    "--output", "-o", type=click.Path(path_type=Path), help="Write the review here instead of stdout."
)
@config_options("Config file (default: .prereview.yml at the base revision).")
@click.option("--demo", is_flag=True, help="Review a built-in example change (makes a temporary repo).")
@click.option(
    "--worktree",
    is_flag=True,
    help="Review the working tree (tracked files, staged or not) against the base, as `git diff` shows it.",
)
def review(
    repo: Path,
    base: str | None,
    head: str | None,
    fmt: str,
    output: Path | None,
    config_file: Path | None,
    overrides: dict[str, Any],
    demo: bool,
    worktree: bool,
) -> None:
    """Review a change (base..head) and print the findings."""
    from ..forges.local import LocalForge
    from ..pipeline.run import exit_code, load_config, review_change
    from ..render import render
    from ..types import ChangeRef
    from .ui import console_progress

    shown = fmt == "text" and output is None  # the review goes to the terminal as text
    if output is not None and (output.is_dir() or not output.parent.is_dir()):
        # checked before the review runs, so a typo does not cost a whole model run
        raise PrereviewError(f"cannot write {output}; pass a file path in an existing directory to --output")
    tmp = None
    if demo:
        from ..demo import make_repo

        tmp = tempfile.TemporaryDirectory(prefix="prereview-demo-")
        repo = make_repo(Path(tmp.name) / "demo")
    if worktree and head is not None:
        raise PrereviewError("--worktree reviews the working tree as the head; drop --head (or --worktree)")
    change = LocalForge().fetch(ChangeRef("local", str(repo), base, head), worktree=worktree)
    change = replace(change, notes=(*change.notes, *_local_notes(change, head, worktree, config_file)))
    cfg = load_config(change.workdir, change.base_sha, config_file=config_file, overrides=overrides)
    if demo:  # first: what is off on this machine and how to turn it on, then the change itself
        from ..demo import behaviour_off, change_header

        if off := behaviour_off(cfg):
            click.echo(f"prereview demo: {off}", err=True)
        assert change.workdir is not None
        click.echo(change_header(change.workdir, change.base_sha, change.head_sha), nl=False, err=not shown)
    with console_progress(enabled=output is not None or fmt == "text" or sys.stderr.isatty()) as progress:
        if not change.diff_text.strip():
            progress.message(
                f"nothing to review: {change.base_sha[:12]}..{change.head_sha[:12]} has no changes"
            )
        result = review_change(change, cfg, progress=progress)
    if overrides.get("review.filter_mode"):  # as reviewdog: print only what the filter lets through
        result = _filtered(result, change.diff_text, cfg.review.filter_mode)
    text = render(result, fmt, cfg.review)
    if output is not None:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise PrereviewError(
                f"cannot write {output} ({exc.strerror}); pass a writable path to --output"
            ) from None
        click.echo(f"wrote {fmt} review to {output} ({len(result.findings)} finding(s))", err=True)
    else:
        click.echo(text, nl=False)
    if tmp is not None:
        tmp.cleanup()
    sys.exit(exit_code(result, cfg.review.fail_level))


def _local_notes(change: Any, head: str | None, worktree: bool, config_file: Path | None) -> list[str]:
    """What a local review leaves out that a user may expect in: uncommitted changes, a config edited in
    the working tree (forges/worktree.py)."""
    from ..forges.worktree import config_note, uncommitted_note

    repo = change.workdir
    notes = [] if worktree or head is not None or repo is None else [uncommitted_note(repo)]
    if config_file is None and repo is not None:
        notes.append(config_note(repo, change.base_sha))
    return [n for n in notes if n]


def _filtered(result: Any, diff_text: str, mode: str) -> Any:
    """The review with only the findings `--filter-mode` shows, and a note on how many it hid."""
    from ..change.diff import parse
    from ..review_filters import within

    kept, hidden = within(result.findings, parse(diff_text), mode)
    if not hidden:
        return result
    note = (
        f"--filter-mode {mode}: {hidden} finding(s) outside it not shown (--filter-mode nofilter shows all)"
    )
    return replace(result, findings=tuple(kept), notes=(*result.notes, note))


@cli.group()
def models() -> None:
    """Known models: list them, or print the path of one (assembling it on first use)."""


@models.command("list")
def models_list() -> None:
    """List catalog models and whether they are installed."""
    from ..models.catalog import CATALOG, DEFAULT_MODEL, installed
    from .ci_model import is_cached

    for e in CATALOG.values():
        fetch = f"not installed (python -m bot.cli.ci_model {e.name})"
        state = "installed" if installed(e) else "in the cache" if is_cached(e) else fetch
        default = " (default)" if e.name == DEFAULT_MODEL else ""
        click.echo(
            f"{e.name}{default}\t{e.description}\t{e.size / 1e6:.0f} MB\tsha256 {e.sha256[:12]}…\t{state}"
        )


@models.command("path")
@click.argument("name")
def models_path(name: str) -> None:
    """Print the local GGUF path of NAME, assembling and verifying it first if needed."""
    from ..models.catalog import resolve

    click.echo(str(resolve(name, progress=lambda m: click.echo(m, err=True))))


@cli.group("config")
def config_group() -> None:
    """Inspect configuration."""


@config_group.command("show")
@click.option("--config", "config_file", type=click.Path(path_type=Path), help="Config file to validate.")
def config_show(config_file: Path | None) -> None:
    """Validate a config file and print the effective configuration as YAML."""
    import yaml

    from ..pipeline.run import load_config

    here = Path(".prereview.yml")
    if config_file is None and here.exists():
        click.echo(
            "config show: validating ./.prereview.yml from the working tree; `prereview review` reads it as "
            "committed at the base revision (pass --config .prereview.yml to review with this one)",
            err=True,
        )
    cfg = load_config(None, None, config_file=config_file or (here if here.exists() else None))
    click.echo(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False), nl=False)


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM: first every process this command started (semgrep and its semgrep-core, an environment
    build: killing only the direct child would leave its children running), then unwind like Ctrl-C so
    that temporary checkouts are removed."""
    from ..proctree import kill_descendants

    kill_descendants()
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if main_thread else None  # serve/worker: their own
    try:
        _main(argv)
    finally:
        if main_thread and previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(argv: list[str] | None) -> None:
    from ..proctree import kill_descendants

    try:
        cli.main(args=argv, prog_name="prereview", standalone_mode=False)
    except PrereviewError as exc:
        click.echo(f"prereview: error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        kill_descendants()  # a scanner or an environment build started in a thread must not run on
        click.echo("prereview: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:  # `prereview review | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
    except Exception:
        # A bug, not a user error: keep the traceback for the report, but exit 2 as documented
        # (exit 1 means "a finding reached --fail-level" and must not be produced by a crash).
        traceback.print_exc()
        click.echo("prereview: internal error (a bug); please report it with the traceback above", err=True)
        sys.exit(2)
