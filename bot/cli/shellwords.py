"""Run a command with extra arguments from an environment variable, split like a shell command line.

    python -m bot.cli.shellwords VAR -- CMD [ARG...]

runs CMD ARG... followed by the words of $VAR: quotes and backslashes are honoured (`--config "my
dir/c.yml"` is two words), nothing is expanded or executed (no globs, no `$(...)`). The Action's
`args` input and the GitLab template's PREREVIEW_ARGS go through it, so neither relies on unquoted
word splitting.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence


class WordsError(ValueError):
    pass


def split(text: str, name: str = "args") -> list[str]:
    try:
        return shlex.split(text, comments=False, posix=True)
    except ValueError as exc:  # "No closing quotation", "No escaped character"
        raise WordsError(
            f"{name}: cannot split {text!r} like a command line ({exc}); balance the quotes"
        ) from None


def command(argv: Sequence[str], env: dict[str, str] | os._Environ[str]) -> list[str]:
    if len(argv) < 3 or argv[1] != "--":
        raise WordsError("usage: python -m bot.cli.shellwords VAR -- CMD [ARG...]")
    var, cmd = argv[0], list(argv[2:])
    return cmd + split(env.get(var, ""), var)


def main(argv: Sequence[str] | None = None) -> None:
    try:
        cmd = command(sys.argv[1:] if argv is None else argv, os.environ)
    except WordsError as exc:
        print(f"prereview: {exc}", file=sys.stderr)
        sys.exit(2)
    sys.stdout.flush()
    os.execvp(cmd[0], cmd)  # noqa: S606 (exec the command, argv as given: no shell)


if __name__ == "__main__":
    main()
