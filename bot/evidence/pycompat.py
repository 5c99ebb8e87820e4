"""Old trees on this Python: the `collections` aliases of the abstract base classes, which Python 3.10
removed (`collections.Mapping`, `collections.Callable` …), restored for the test runs of a base whose own
code still uses them.

Why: a 2017 dateutil tree calls `isinstance(tzinfos, collections.Callable)` in its parser; on 3.11 that
raises AttributeError, and 413 of its 1,645 tests failed at base and at head alike, so nothing those tests
reach could be compared. With the aliases restored, 1 failed (measured on dateutil 60d0586, outside the
corpus' cases). The same holds for any tree written before 3.10 that never moved to `collections.abc`.

How: a `sitecustomize` of prereview's (this module's constant text, never the change's) in a folder under
the environments' folder, first on PYTHONPATH and shown read-only to the sandbox; it only sets names
`collections` lacks, to the very objects of `collections.abc`. Only where the base's own code uses an
alias outside a comment, in a file that does not also import `collections.abc` (a fallback import) —
so a change that adds such a use to a tree that moved on still fails its tests, as it would in production.
One note line says so.
"""

from __future__ import annotations

import collections.abc
import hashlib
import os
import re
from dataclasses import replace
from pathlib import Path

from .. import fsguard, wording
from ..change import git
from .envbase import ProjectEnv

ABCS = tuple(sorted(collections.abc.__all__))
_USE = (  # `collections.Mapping` or `from collections import Mapping`, not after a `#`
    r"^[^#]*(\bcollections\.("
    + "|".join(ABCS)
    + r")\b|\bfrom collections import [^#]*\b("
    + "|".join(ABCS)
    + r")\b)"
)
SITECUSTOMIZE = (
    "# prereview: the aliases Python 3.10 removed from `collections`, for a tree that still uses them\n"
    "import collections, collections.abc\n"
    "for _name in collections.abc.__all__:\n"
    "    if not hasattr(collections, _name):\n"
    "        setattr(collections, _name, getattr(collections.abc, _name))\n"
)


def uses_removed_aliases(repo: Path, sha: str) -> list[str]:
    """The alias names the tree at `sha` uses (sorted), from its Python files that do not also name
    `collections.abc`; [] when none does (or git cannot tell)."""
    try:  # one pass: `<sha>:<path>` NUL `<the matched text>` per match
        out = git.git(repo, "grep", "-z", "-oE", _USE, sha, "--", "*.py", check=False)
        matches = [line.split("\0", 1) for line in out.splitlines() if "\0" in line]
        files = sorted({where.partition(":")[2] for where, _ in matches})
        moved = (
            git.git(repo, "grep", "-lF", "collections.abc", sha, "--", *files, check=False) if files else ""
        )
    except git.GitError:
        return []
    if not files or set(files) <= {f.partition(":")[2] for f in moved.split()}:
        return []
    abcs = "|".join(ABCS)
    text = "\n".join(match for _, match in matches)
    names = set(re.findall(r"\bcollections\.(" + abcs + r")\b", text))
    for imported in re.findall(r"\bfrom collections import ([^#\n]*)", text):
        names |= set(re.findall(r"\b(" + abcs + r")\b", imported))
    return sorted(names)


def with_aliases(env: ProjectEnv, repo: Path, sha: str, env_dir: Path) -> ProjectEnv:
    """`env` with the aliases restored when the base at `sha` uses them (a Python environment prereview
    runs in bubblewrap or with no sandbox: `built` or `tests.python`); else `env` as it is."""
    if env.kind not in ("built", "python") or env.error is not None or "PYTHONPATH" not in env.vars:
        return env
    names = uses_removed_aliases(repo, sha)
    if not names:
        return env
    digest = hashlib.sha256(SITECUSTOMIZE.encode()).hexdigest()[:16]
    folder = env_dir / f"pycompat-{digest}"
    if not (folder / "sitecustomize.py").is_file():  # written whole, then moved: a concurrent review
        folder.mkdir(parents=True, exist_ok=True)  # never reads half of it
        part = f"sitecustomize.py.{os.getpid()}.part"
        fsguard.write_text(folder, part, SITECUSTOMIZE, create=True)
        os.replace(folder / part, folder / "sitecustomize.py")
    shown = wording.first_few([f"`collections.{n}`" for n in names])
    note = (
        f"Test environment: the base's code uses {shown}, which Python 3.10 removed; the tests ran with "
        "those names restored as aliases of `collections.abc` (a `sitecustomize` of prereview's)."
    )
    return replace(
        env,
        key=hashlib.sha256(f"{env.key}:{digest}".encode()).hexdigest()[:16],
        vars={**env.vars, "PYTHONPATH": f"{folder}:{env.vars['PYTHONPATH']}"},
        ro_paths=(*env.ro_paths, str(folder)),
        notes=[*env.notes, note],
    )
