"""The middle step between a pinned install that fails and one with every pin left out: the same install
with only the requirement that failed relaxed — its version left out of requirements.txt and dropped from
constraints.txt — and every other pin kept (pininstall.install_with_fallback repeats it for each next
requirement that fails, at most `pininstall.MAX_RELAXED` of them, before it unpins everything).

Why: flask's 2021 trees (tuning cases) pin `greenlet==1.1.0`, which has no wheel for Python 3.11 and
fails to build. Unpinning everything then installed today's Werkzeug 3 under the 2021 Flask, so the
environment "built" and every test failed at collection (ImportError). Relaxing greenlet alone keeps
Werkzeug at the version the tree was written for. Where the package index has upload dates a date bound
could pick the releases of the tree's own time instead; this step needs nothing from the index.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

from . import layouts
from .pininstall import unpinned

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def name_of(req: str) -> str:
    """The normalised project name of a requirement (`Greenlet==1.1.0 ; python_version<'4'` ->
    `greenlet`); "" for an option line (`-e .`) or anything else without one."""
    m = _NAME.match(req)
    return layouts.norm(m.group(1)) if m else ""


def relaxed(lines: Sequence[str], names: set[str], drop: bool) -> list[str]:
    """`lines` with each requirement named in `names` without its version (`name[extras]; marker`), or
    left out when `drop` (a constraint without a version constrains nothing); the others as they are."""
    out: list[str] = []
    for line in lines:
        if name_of(line) not in names:
            out.append(line)
        elif not drop:
            out.extend(unpinned([line]) or [line])
    return out


def relax_args(
    d: Path, reqs: Sequence[str], constraints: Sequence[str], extra: Sequence[str]
) -> Callable[[Sequence[str]], list[str] | None]:
    """For the venv folder `d` whose install reads `reqs` and `constraints`: a function from the
    requirements that failed so far (pip's own words, `greenlet==1.1.0`) to the installer arguments of a
    retry with those relaxed (files written into `d`), or None when relaxing the last of them changes
    nothing (not pinned by us: a dependency's own requirement, an option line)."""

    def args(failed: Sequence[str]) -> list[str] | None:
        names = [name_of(r) for r in failed]
        if not names or not names[-1]:
            return None
        before, now = set(names[:-1]) - {""}, set(names) - {""}
        if relaxed(reqs, before, False) == relaxed(reqs, now, False) and relaxed(
            constraints, before, True
        ) == relaxed(constraints, now, True):
            return None
        req_file, con_file = d / "requirements-relaxed.txt", d / "constraints-relaxed.txt"
        req_file.write_text("".join(f"{r}\n" for r in relaxed(reqs, now, False)), encoding="utf-8")
        con_file.write_text("".join(f"{c}\n" for c in relaxed(constraints, now, True)), encoding="utf-8")
        return ["-r", str(req_file), "-c", str(con_file), *extra]

    return args
