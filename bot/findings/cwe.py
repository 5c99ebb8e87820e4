"""The CWE list (MITRE CWE 4.14, shipped as bot/data/cwe.json; terms in bot/data/CWE-NOTICE).

Used to name a CWE in words and to tell when an id cannot label a weakness in a given file: ids that do
not exist, categories and views (MITRE: "not to be used for mapping"), deprecated entries, and
weaknesses that MITRE lists only for C, C++ and assembly (buffer overflows, IOCTLs), named on a Python
or JS file.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import PurePosixPath

MEMORY_UNSAFE_SUFFIXES = frozenset(
    {".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".m", ".mm", ".s", ".asm", ".ino"}
)


@dataclass(frozen=True)
class Entry:
    id: str  # "CWE-79"
    name: str
    kind: str  # "weakness" | "category" | "view"
    status: str  # "Stable", "Draft", "Incomplete", "Deprecated", "Obsolete"
    c_only: bool  # MITRE lists it for C, C++ or assembly only

    @property
    def short_name(self) -> str:
        """The name as people say it: "Cross-site Scripting" for CWE-79 (MITRE's quoted alias when the
        name has one), else the name itself."""
        alias = re.search(r"\('([^']+)'\)\s*$", self.name)
        return alias.group(1) if alias else self.name

    @property
    def url(self) -> str:
        return f"https://cwe.mitre.org/data/definitions/{self.id.removeprefix('CWE-')}.html"


@functools.cache
def _table() -> dict[str, Entry]:
    data = json.loads(resources.files("bot").joinpath("data/cwe.json").read_text(encoding="utf-8"))
    return {
        f"CWE-{num}": Entry(f"CWE-{num}", name, kind, status, bool(c_only))
        for num, (name, kind, status, c_only) in data["entries"].items()
    }


def lookup(cwe: str | None) -> Entry | None:
    m = re.fullmatch(r"CWE-0*(\d+)", (cwe or "").strip(), re.I)
    return _table().get(f"CWE-{m.group(1)}") if m else None


def unusable(cwe: str, path: str) -> str | None:
    """Why `cwe` cannot label a weakness in the file `path`, or None when it can."""
    entry = lookup(cwe)
    if entry is None:
        return f"{cwe} is not in the CWE list"
    if entry.kind != "weakness":
        return f"{cwe} is a CWE {entry.kind} ({entry.name}), not a weakness"
    if entry.status in ("Deprecated", "Obsolete"):
        return f"{cwe} is {entry.status.lower()} in the CWE list"
    if entry.c_only and PurePosixPath(path).suffix.lower() not in MEMORY_UNSAFE_SUFFIXES:
        return f"{cwe} ({entry.name}) applies to C, C++ and assembly code only"
    return None
