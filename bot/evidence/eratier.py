"""The unpinned rebuild of an old tree in two tiers: the test runner as released when this Python was
supported, everything else as released at the base commit's date.

Why: a 2021 flask tree whose pins do not run here (pytest 6.2 and `py` 1.10 fail on Python 3.11) was
rebuilt with every requirement as released up to this Python's floor (datebound.py: 3.11's release plus
half a year, 2023-04-25). That floor is years after the tree: it brought Werkzeug 2.2, whose test client
no longer takes `as_tuple`, and 230 of flask's 476 tests failed. The tree's own libraries as released at
its date (Werkzeug 2.0.1) run on 3.11; what does not is the test runner, which hooks the interpreter's
import and assertion machinery, and the odd compiled package with no wheel for this Python that no
longer builds (greenlet 1.1.0). So the runner (pytest, its own dependencies the tree names, its plugins)
is installed first at the floor, then the requirements at the base's date: pip keeps an installed
release that satisfies an unpinned requirement, even one newer than the bound. A package whose build
then fails is moved to the floor tier too, one at a time (at most MAX_LIFTED). Measured on flask
9f0da9b7 (2021, a tree outside the corpus), the review's base run: 246 passed, 230 failed -> 476 passed.

Where the era tier fails (a library of the tree's date that does not import on this Python), the caller
installs everything at the floor, as before (runs.py rebuilds at the floor when the era environment's
tests do not run).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from .. import wording
from .envbase import EnvError
from .pininstall import install_failure
from .pinrelax import name_of

# pytest and the packages it imports that also break on a newer interpreter; its plugins by prefix
RUNNER = ("pytest", "pluggy", "py", "iniconfig", "tomli", "exceptiongroup", "atomicwrites")
MAX_LIFTED = 3  # packages moved to the floor tier after a failed build, one by one
TIERED = " (the base commit's date), and "  # in the note of an environment built in two tiers


def runner_names(requirements: Sequence[str]) -> list[str]:
    """`pytest`, then the runner's own packages and plugins among `requirements` (normalised names)."""
    out = ["pytest"]
    for req in requirements:
        name = name_of(req)
        if name and name not in out and (name in RUNNER or name.startswith("pytest-")):
            out.append(name)
    return out


def install(
    at: Callable[[list[str], datetime], object],
    args: list[str],
    requirements: Sequence[str],
    era: datetime,
    floor: datetime,
) -> list[str]:
    """Install the runner at `floor`, then `args` (the unpinned requirements' installer arguments) at
    `era`, through `at(args, bound)`; a package whose build fails at `era` goes to the floor tier and
    the era install is repeated. Returns the names installed at the floor; EnvError when the era install
    still fails (another failure, or MAX_LIFTED packages moved already)."""
    lifted = runner_names(requirements)
    runner = len(lifted)
    at(list(lifted), floor)
    while True:
        try:
            at(args, era)
            return lifted
        except EnvError as exc:
            name = name_of(install_failure(exc.output or str(exc))[0])
            if not name or name in lifted or len(lifted) - runner >= MAX_LIFTED:
                raise
            lifted.append(name)
            at([name], floor)


def attempt(
    at: Callable[[list[str], datetime], object],
    args: list[str],
    requirements: Sequence[str],
    era: datetime,
    floor: datetime,
) -> str | None:
    """`install`, and the note's words for its bound; None when it failed (the caller installs everything
    at the floor, over what the era tier left)."""
    try:
        return describe(era, floor, install(at, args, requirements, era, floor))
    except EnvError:
        return None


def describe(era: datetime, floor: datetime, lifted: Sequence[str]) -> str:
    """How the two-tier bound reads in the note."""
    shown = wording.first_few(lifted, 5)
    return (
        f"as released up to {era.date().isoformat()}{TIERED}{shown} as released "
        f"up to {floor.date().isoformat()} (the base commit predates this Python's supporting releases)"
    )
