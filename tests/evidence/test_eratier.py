"""The unpinned rebuild of an old tree in two tiers (bot/evidence/eratier.py): the runner at this
Python's floor, the rest at the base commit's date, a package whose build fails moved to the floor."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from bot.evidence import datebound, eratier
from bot.evidence.envbase import EnvError

UTC = timezone.utc
ERA = datetime(2021, 6, 25, 12, tzinfo=UTC)
FLOOR = datetime(2023, 4, 25, tzinfo=UTC)
ARGS = ["-r", "requirements-unpinned.txt"]


def _build_failure(name: str, version: str) -> EnvError:
    out = (
        f"Collecting {name}=={version}\n  Downloading {name}-{version}.tar.gz\n"
        "Building wheels for collected packages: x\n"
        "  error: subprocess-exited-with-error\n\n"
        f"  × Building wheel for {name} (pyproject.toml) did not run successfully.\n"
        "  │ exit code: 1\n  ╰─> [3 lines of output]\n"
        "      src/greenlet/greenlet.h:42:5: error: unknown type name 'CFrame'\n"
        "      [end of output]\n"
    )
    return EnvError("`pip install` failed", out)


class Pip:
    """Records each install and its bound; fails the era install while `broken` packages are not at the
    floor (as greenlet 1.1.0 does not build on 3.11)."""

    def __init__(self, broken: list[str], other: EnvError | None = None) -> None:
        self.calls: list[tuple[list[str], datetime]] = []
        self.broken, self.other, self.floor = broken, other, set()

    def __call__(self, args: list[str], bound: datetime) -> None:
        self.calls.append((list(args), bound))
        if bound == FLOOR:
            self.floor.update(args)
            return
        if self.other is not None:
            raise self.other
        for name in self.broken:
            if name not in self.floor:
                raise _build_failure(name, "1.1.0")


def test_the_runner_goes_to_the_floor_and_the_rest_to_the_base_commits_date():
    pip = Pip([])
    reqs = [
        "asgiref==3.3.4",
        "pluggy==0.13.1",
        "py==1.10.0",
        "pytest==6.2.4",
        "pytest-asyncio==0.15",
        "Werkzeug >= 2.0",
    ]
    lifted = eratier.install(pip, ARGS, reqs, ERA, FLOOR)
    assert lifted == ["pytest", "pluggy", "py", "pytest-asyncio"]
    assert pip.calls == [(lifted, FLOOR), (ARGS, ERA)]  # the runner first: pip keeps it in the era install


def test_a_package_that_does_not_build_at_the_era_is_moved_to_the_floor_one_at_a_time():
    pip = Pip(["greenlet", "markupsafe"])
    lifted = eratier.install(pip, ARGS, ["pytest", "greenlet", "markupsafe"], ERA, FLOOR)
    assert lifted == ["pytest", "greenlet", "markupsafe"]
    assert [b for _, b in pip.calls] == [FLOOR, ERA, FLOOR, ERA, FLOOR, ERA]
    note = eratier.describe(ERA, FLOOR, lifted)
    assert note == (
        "as released up to 2021-06-25 (the base commit's date), and pytest, greenlet, markupsafe as "
        "released up to 2023-04-25 (the base commit predates this Python's supporting releases)"
    )
    assert eratier.TIERED in note


def test_a_failure_naming_no_package_or_too_many_gives_up_for_the_caller_to_install_at_the_floor():
    with pytest.raises(EnvError):
        eratier.install(
            Pip([], other=EnvError("`pip install` failed: network down", "")), ARGS, [], ERA, FLOOR
        )
    pip = Pip(["a1", "a2", "a3", "a4"])
    with pytest.raises(EnvError):
        eratier.install(pip, ARGS, [], ERA, FLOOR)
    assert sum(1 for _, b in pip.calls if b == ERA) == eratier.MAX_LIFTED + 1


def test_the_era_is_the_base_commits_date_only_where_this_pythons_floor_is_later():
    assert datebound.era(ERA, FLOOR) == ERA
    assert datebound.era(datetime(2024, 3, 1, tzinfo=UTC), datetime(2024, 3, 1, tzinfo=UTC)) is None
    assert datebound.era(None, FLOOR) is None and datebound.era(ERA, None) is None
