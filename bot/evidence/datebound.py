"""The unpinned retry resolves the releases of the base commit's time, not today's: a 2021 tree whose
pins do not install here gets what its tests ran with then (Werkzeug 2.0 for flask 2.0), not Werkzeug 3
(which removed what flask 2.0 imports). The bound is never earlier than this Python's first releases
had time to support it (a 2017 tree gets what ran on Python 3.11 half a year after 3.11 came out).

pip ≥ 26 (`--uploaded-prior-to`) and uv (`--exclude-newer`) filter by the index's upload times (PEP 700:
pypi.org serves them). An index without upload times (a `file://` mirror) is not bounded: pip keeps its
files, so the bound only narrows what such an index also offers from an index that has the times.
"""

from __future__ import annotations

import sys
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from ..change import git

UTC = timezone.utc

# CPython x.y.0 releases: libraries support a new Python within months of it
PYTHON_RELEASED = {
    (3, 8): date(2019, 10, 14),
    (3, 9): date(2020, 10, 5),
    (3, 10): date(2021, 10, 4),
    (3, 11): date(2022, 10, 24),
    (3, 12): date(2023, 10, 2),
    (3, 13): date(2024, 10, 7),
    (3, 14): date(2025, 10, 7),
}
SUPPORT_LAG = timedelta(days=183)
STALE = timedelta(days=90)  # a bound newer than this leaves out too little to be worth a rebuild
PIP_WITH_BOUND = "pip>=26"  # the first pip with --uploaded-prior-to


def floor(version: tuple[int, int] = (sys.version_info[0], sys.version_info[1])) -> datetime | None:
    """The earliest bound for this Python: its x.y.0 release and SUPPORT_LAG; None for a Python newer
    than the table (no bound is better than one that predates it); the oldest known for older ones."""
    if version > max(PYTHON_RELEASED):
        return None
    released = PYTHON_RELEASED.get(version, min(PYTHON_RELEASED.values()))
    return datetime(released.year, released.month, released.day, tzinfo=UTC) + SUPPORT_LAG


def bound(
    commit_time: datetime, version: tuple[int, int] = (sys.version_info[0], sys.version_info[1])
) -> datetime | None:
    """Releases uploaded after this are left out of the unpinned install: the base commit's time, or
    this Python's floor when that is later; None when there is no bound."""
    low = floor(version)
    return None if low is None else max(commit_time.astimezone(UTC), low)


def era(commit: datetime | None, limit: datetime | None) -> datetime | None:
    """The base commit's own time where the bound is later (this Python's floor): the date the tree's
    libraries are installed as of, the test runner at the floor (eratier.py); None otherwise."""
    if commit is None or limit is None or commit.astimezone(UTC) >= limit:
        return None
    return commit.astimezone(UTC)


def narrows(repo: Path, sha: str, now: datetime | None = None) -> bool:
    """Whether the bound for this commit leaves releases out: it is over STALE old. A tree whose
    requirements pin nothing (`Werkzeug >= 2.2.2`) gets today's releases, which an old tree's tests may
    not import (flask 2.2 under Werkzeug 3: `url_quote` is gone); its date's releases may run them."""
    when = commit_time(repo, sha)
    limit = bound(when) if when is not None else None
    return limit is not None and limit < (now or datetime.now(UTC)) - STALE


def commit_time(repo: Path, sha: str) -> datetime | None:
    try:
        text = git.git(repo, "log", "-1", "--format=%cI", sha).strip()
        return datetime.fromisoformat(text)
    except (git.GitError, ValueError):
        return None


def args(tool: str, when: datetime) -> list[str]:
    """The installer's option for the bound (uv: --exclude-newer; pip ≥ 26: --uploaded-prior-to)."""
    stamp = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return ["--exclude-newer", stamp] if tool == "uv" else ["--uploaded-prior-to", stamp]


def describe(when: datetime, commit: datetime | None) -> str:
    """How the bound reads in the note: the date, and whether it is the base's or this Python's floor."""
    if commit is not None and when <= commit.astimezone(UTC):
        why = "the base commit's date"
    else:
        why = "the base commit predates this Python's supporting releases"
    return f"as released up to {when.date().isoformat()} ({why})"


UNPINNED_NOTE = "Test environment: the test requirements installed without their pins, "
