"""What a bubblewrap run sees of the Python prereview runs on: the interpreter and pytest, nothing else.

prereview's interpreter is shown read-only so that a Python project's tests (and the behaviour
harness) find `python` and pytest without an environment of their own. Its site-packages also hold
prereview itself (or the `.pth` pointing at its source), the model's chunk packages and every other
dependency: a run needs none of them, so each site-packages folder of the interpreter is covered by an
empty tmpfs, only the distributions in `RUN_NEEDS` and their requirements (read with importlib.metadata)
are bound back into it, and it is made read-only again. A folder under a path named in
`sandbox.ro_paths` (or by `tests.python`) is left whole: that interpreter was asked for as it is.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import site
from collections.abc import Sequence

RUN_NEEDS = ("pytest",)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


@functools.cache
def needed_entries(site_dir: str, needs: tuple[str, ...] = RUN_NEEDS) -> tuple[str, ...]:
    """The top-level entries of `site_dir` (packages, modules, .dist-info folders) of `needs` and of
    everything they require (extras left out), found by their installed file lists."""
    dists = {_norm(d.metadata["Name"] or ""): d for d in importlib.metadata.distributions(path=[site_dir])}
    todo, seen, entries = [_norm(n) for n in needs], set(), set()
    while todo:
        name = todo.pop()
        if name in seen or name not in dists:
            continue
        seen.add(name)
        for f in dists[name].files or ():
            top = f.parts[0] if f.parts else ""
            if top and top not in ("..", "__pycache__") and not top.endswith(".pth"):
                entries.add(top)
        for req in dists[name].requires or ():
            if "extra ==" not in req:
                todo.append(_norm(re.split(r"[\s<>=!~;\[(]", req, maxsplit=1)[0]))
    return tuple(sorted(entries))


def bwrap_args(bound: Sequence[str], whole: Sequence[str]) -> list[str]:
    """bwrap arguments (after the binds of `bound`) hiding the interpreter's site-packages but for what a
    run needs; folders under `whole` are left as they are."""
    out: list[str] = []
    for sp in dict.fromkeys(os.path.normpath(p) for p in site.getsitepackages()):
        if not os.path.isdir(sp) or not _under(sp, bound) or _under(sp, whole):
            continue
        out += ["--tmpfs", sp]
        for e in needed_entries(sp):
            if os.path.lexists(p := os.path.join(sp, e)):  # (an upgrade since the list was made)
                out += ["--ro-bind", p, p]
        out += ["--remount-ro", sp]
    return out
