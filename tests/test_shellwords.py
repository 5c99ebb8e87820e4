"""`python -m bot.cli.shellwords VAR -- CMD…`: the Action's `args` and the template's PREREVIEW_ARGS."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bot.cli.shellwords import WordsError, command, split


def test_quotes_are_honoured_and_nothing_is_expanded() -> None:
    assert split('--config "my dir/c.yml" --full') == ["--config", "my dir/c.yml", "--full"]
    assert split("--model 'a b' x\\ y") == ["--model", "a b", "x y"]
    assert split("$(touch /tmp/pwned) *.py ~") == ["$(touch", "/tmp/pwned)", "*.py", "~"]
    assert split("") == [] and split("  ") == []


def test_unbalanced_quotes_are_one_line_naming_the_variable() -> None:
    with pytest.raises(WordsError, match="PREREVIEW_ARGS: .*balance the quotes"):
        split('--config "x', "PREREVIEW_ARGS")


def test_the_command_gets_the_words_appended() -> None:
    assert command(["V", "--", "prereview", "github"], {"V": "--full -x 'a b'"}) == [
        "prereview",
        "github",
        "--full",
        "-x",
        "a b",
    ]
    with pytest.raises(WordsError, match="usage"):
        command(["V", "prereview"], {})


def test_it_execs_with_the_exit_code_kept() -> None:
    argv = [
        sys.executable,
        "-m",
        "bot.cli.shellwords",
        "ARGS",
        "--",
        sys.executable,
        "-c",
        "import sys; print(sys.argv[1:]); sys.exit(3)",
    ]
    proc = subprocess.run(
        argv, env={"ARGS": "'one word' two", "PATH": "/usr/bin:/bin"}, capture_output=True, text=True
    )
    assert proc.returncode == 3 and proc.stdout.strip() == "['one word', 'two']"
    bad = subprocess.run(argv, env={"ARGS": "'open", "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert bad.returncode == 2 and "balance the quotes" in bad.stderr and "Traceback" not in bad.stderr
