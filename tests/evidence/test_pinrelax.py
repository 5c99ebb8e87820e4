"""A pinned install that fails is retried with only the failing requirement relaxed, the other pins kept,
before every pin is left out (flask's 2021 trees: greenlet 1.1.0 does not build on Python 3.11, and
everything unpinned brings Werkzeug 3 under Flask 2.0). The installer here is a stand-in that reads the
files it is given the way pip does (`-r`, `-c`) and fails on the pins it is told cannot install, with
pip's own words; test_envpins.py runs the same with pip against a local index."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from bot.evidence import pininstall
from bot.evidence.envbase import EnvError
from bot.evidence.pinrelax import relax_args

Relax = Callable[[Sequence[str]], "list[str] | None"]
DATA = Path(__file__).parent.parent / "data" / "pip"
REQS = ["pytest", "flask==2.0.1", "werkzeug==2.0.1", "greenlet==1.1.0", "jinja2==3.0.1 ; python_version>'3'"]


class Installer:
    """Records what each install was given; fails (as pip does) on the first of `broken` still pinned."""

    def __init__(self, broken: list[str]) -> None:
        self.broken: list[str] = broken
        self.seen: list[list[str]] = []

    def __call__(self, args: list[str]) -> None:
        lines = [
            ln
            for flag, path in zip(args, args[1:], strict=False)
            if flag in ("-r", "-c")
            for ln in Path(path).read_text().splitlines()
        ]
        self.seen.append(lines)
        for pin in self.broken:
            if pin in lines:
                pin = pin.split(" ;")[0]  # pip names the requirement without its marker
                if pin == "greenlet==1.1.0":  # werkzeug's 2021 test pins on 3.11, captured
                    raise EnvError("pip failed", (DATA / "werkzeug_2021_tests_py311.txt").read_text())
                raise EnvError(
                    "pip failed",
                    f"ERROR: Could not find a version that satisfies the requirement {pin} (from versions: "
                    f"9.0)\nERROR: No matching distribution found for {pin}\n",
                )


def _setup(tmp_path: Path, constraints: Sequence[str] = ()) -> tuple[list[str], list[str], Relax]:
    (tmp_path / "requirements.txt").write_text("\n".join(REQS) + "\n")
    (tmp_path / "constraints.txt").write_text("".join(f"{c}\n" for c in constraints))
    pinned = ["-r", str(tmp_path / "requirements.txt"), "-c", str(tmp_path / "constraints.txt")]
    (tmp_path / "unpinned.txt").write_text("pytest\nflask\nwerkzeug\ngreenlet\njinja2\n")
    retry = ["-r", str(tmp_path / "unpinned.txt")]
    return pinned, retry, relax_args(tmp_path, REQS, constraints, ["--only-binary", ":all:"])


def test_only_the_pin_that_failed_is_relaxed_and_the_others_stay(tmp_path):
    pinned, retry, relax = _setup(tmp_path, ["itsdangerous==2.0.1"])
    step = Installer(["greenlet==1.1.0"])
    notes = pininstall.install_with_fallback(step, pinned, retry, relax)
    assert notes == [
        "Test environment: `greenlet==1.1.0` could not be installed (its build failed: "
        "src/greenlet/greenlet.h:42:5: error: unknown type name ‘CFrame’); installed it without its pin, "
        "the other pins kept."
    ]
    # not the wording of a fully unpinned venv: runs.py still rebuilds that one if no test runs
    assert "without their pins" not in notes[0]
    assert len(step.seen) == 2 and step.seen[-1] == [
        "pytest",
        "flask==2.0.1",
        "werkzeug==2.0.1",  # still the tree's Werkzeug, not today's
        "greenlet",
        "jinja2==3.0.1 ; python_version>'3'",
        "itsdangerous==2.0.1",
    ]
    assert relax(["greenlet==1.1.0"]) == [
        "-r",
        str(tmp_path / "requirements-relaxed.txt"),
        "-c",
        str(tmp_path / "constraints-relaxed.txt"),
        "--only-binary",
        ":all:",
    ]


def test_each_next_failing_pin_is_relaxed_in_turn_and_named_in_the_one_note(tmp_path):
    """greenlet first, then a pin only the constraints hold (a uv.lock's): dropped from them."""
    pinned, retry, relax = _setup(tmp_path, ["itsdangerous==2.0.1", "markupsafe==2.0.1"])
    step = Installer(["greenlet==1.1.0", "markupsafe==2.0.1"])
    notes = pininstall.install_with_fallback(step, pinned, retry, relax)
    assert len(notes) == 1 and notes[0].startswith("Test environment: `greenlet==1.1.0` could not be ")
    assert notes[0].endswith(
        ", then `markupsafe==2.0.1` (not on the index (versions there: 9.0)); installed each without its "
        "pin, the other pins kept."
    )
    assert len(step.seen) == 3
    assert "werkzeug==2.0.1" in step.seen[-1] and "itsdangerous==2.0.1" in step.seen[-1]
    assert "greenlet" in step.seen[-1] and not any(ln.startswith("markupsafe") for ln in step.seen[-1])


def test_at_most_three_are_relaxed_then_every_pin_is_left_out(tmp_path):
    pinned, retry, relax = _setup(tmp_path)
    step = Installer(
        ["flask==2.0.1", "werkzeug==2.0.1", "greenlet==1.1.0", "jinja2==3.0.1 ; python_version>'3'"]
    )
    notes = pininstall.install_with_fallback(step, pinned, retry, relax)
    assert len(step.seen) == 1 + pininstall.MAX_RELAXED + 1  # pinned, three relaxed, then all unpinned
    assert step.seen[-1] == ["pytest", "flask", "werkzeug", "greenlet", "jinja2"]
    assert step.seen[-2][1:4] == ["flask", "werkzeug", "greenlet"] and step.seen[-2][4].startswith("jinja2==")
    assert notes == [
        "Test environment: `flask==2.0.1` could not be installed (not on the index (versions there: 9.0)), "
        "then `werkzeug==2.0.1` (not on the index (versions there: 9.0)), then `greenlet==1.1.0` (its build "
        "failed: src/greenlet/greenlet.h:42:5: error: unknown type name ‘CFrame’), then `jinja2==3.0.1` (not "
        "on the index (versions there: 9.0)); installed the test requirements without their pins instead."
    ]


def test_a_failure_that_names_no_requirement_goes_straight_to_unpinned(tmp_path):
    pinned, retry, relax = _setup(tmp_path)
    calls: list[list[str]] = []

    def step(args: list[str]) -> None:
        calls.append(args)
        if len(calls) == 1:
            raise EnvError("pip failed", "ERROR: Exception: the disk is full\n")

    notes = pininstall.install_with_fallback(step, pinned, retry, relax)
    assert calls == [pinned, retry] and notes[0].startswith("Test environment: the pinned install failed (")
    assert notes[0].endswith("; installed the test requirements without their pins instead.")


def test_everything_failing_names_each_failure(tmp_path):
    pinned, retry, relax = _setup(tmp_path)
    step = Installer(["greenlet==1.1.0", "greenlet"])
    with pytest.raises(EnvError, match=r"`greenlet==1.1.0` could not be installed .*without the pins too"):
        pininstall.install_with_fallback(step, pinned, retry, relax)
    assert len(step.seen) == 3  # pinned, greenlet relaxed (fails again: not relaxed twice), unpinned
    with pytest.raises(EnvError, match=r"^pip failed$"):  # no unpinned retry, nothing relaxed: pip's own
        pininstall.install_with_fallback(Installer(["pytest"]), pinned, None, relax)
