"""The `prereview` command line: review | models | config, plus lazily loaded forge/server commands."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

import click

from .. import __version__
from ..types import PrereviewError
from .options import config_options

# name -> module exposing `command`; loaded only when invoked, listed only when the module exists.
LAZY_COMMANDS = {
    "github": "bot.cli.github",
    "gitlab": "bot.cli.gitlab",
    "gitea": "bot.cli.gitea",
    "serve": "bot.cli.serve",
    "fix": "bot.cli.fix",
    "worker": "bot.cli.worker",
}


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        lazy = [n for n, m in LAZY_COMMANDS.items() if importlib.util.find_spec(m) is not None]
        return sorted([*super().list_commands(ctx), *lazy])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS and importlib.util.find_spec(LAZY_COMMANDS[name]) is not None:
            return importlib.import_module(LAZY_COMMANDS[name]).command  # type: ignore[no-any-return]
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
def review(
    repo: Path,
    base: str | None,
    head: str | None,
    fmt: str,
    output: Path | None,
    config_file: Path | None,
    overrides: dict[str, Any],
    demo: bool,
) -> None:
    """Review a change (base..head) and print the findings."""
    from ..forges.local import LocalForge
    from ..pipeline.run import exit_code, load_config, review_change
    from ..render import render
    from ..types import ChangeRef
    from .ui import console_progress

    if output is not None and (output.is_dir() or not output.parent.is_dir()):
        # checked before the review runs, so a typo does not cost a whole model run
        raise PrereviewError(f"cannot write {output}; pass a file path in an existing directory to --output")
    tmp = None
    if demo:
        from ..demo import make_repo

        tmp = tempfile.TemporaryDirectory(prefix="prereview-demo-")
        repo = make_repo(Path(tmp.name) / "demo")
    change = LocalForge().fetch(ChangeRef("local", str(repo), base, head))
    cfg = load_config(change.workdir, change.base_sha, config_file=config_file, overrides=overrides)
    with console_progress(enabled=output is not None or fmt == "text" or sys.stderr.isatty()) as progress:
        if not change.diff_text.strip():
            progress.message(
                f"nothing to review: {change.base_sha[:12]}..{change.head_sha[:12]} has no changes"
            )
        result = review_change(change, cfg, progress=progress)
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


@cli.group()
def models() -> None:
    """Known models: list them, or print the path of one (assembling it on first use)."""


@models.command("list")
def models_list() -> None:
    """List catalog models and whether they are installed."""
    from ..models.catalog import CATALOG, DEFAULT_MODEL, installed

    for e in CATALOG.values():
        state = "installed" if installed(e) else f"not installed (pip install 'prereview[{e.extra}]')"
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

    cfg = load_config(
        None,
        None,
        config_file=config_file or (Path(".prereview.yml") if Path(".prereview.yml").exists() else None),
    )
    click.echo(yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False), nl=False)


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="prereview", standalone_mode=False)
    except PrereviewError as exc:
        click.echo(f"prereview: error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
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
