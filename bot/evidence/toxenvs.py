"""Which tox environments are this Python's test set: `testenv:py311`, `testenv:py3`, `testenv:py`, but not
an environment for another Python, whose deps pin what that Python needed (pytest<3.3 for 3.3)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable


def this_pythons(sections: Iterable[str]) -> list[str]:
    """The `testenv:py…` sections of a tox.ini that are not for another Python."""
    return [s for s in sections if s.startswith("testenv:py") and not other_python(s)]


def other_python(section: str, version: tuple[int, int] = sys.version_info[:2]) -> bool:
    """A tox environment for another Python (`testenv:py33`, `testenv:py27-django`, `testenv:pypy3`):
    its deps pin what that Python needed (pytest<3.3 for 3.3) and are not this one's test set. `py3`,
    `py` and this version's own (`py311`) are this Python's."""
    env = section.split(":", 1)[-1]
    if env.startswith("pypy"):
        return True
    m = re.match(r"py(\d)(\d*)(?:$|[-_])", env)
    if m is None:
        return False
    major, minor = int(m.group(1)), m.group(2)
    return major != version[0] or (minor != "" and int(minor) != version[1])
