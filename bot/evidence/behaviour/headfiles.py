"""The files of the change's head revision, listed once: the folders and packages the behaviour stage
reads project classes and the readers of a changed module-level value from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ...change import git
from ...change.diff import is_test_path
from .callables import Changed

MAX_PACKAGE_MODULES = 200  # modules read for the functions a changed module-level value reaches


@dataclass
class HeadFiles:
    workdir: Path
    head_sha: str
    _listing: list[str] | None = field(default=None, repr=False)

    def nearby(self, targets: Sequence[Changed]) -> list[str]:
        """The targets' modules, then the other non-test modules of their folders at head (where the
        classes their parameters take usually live)."""
        paths = [c.path for c in targets]
        for path in dict.fromkeys(paths):
            paths += self.folder(path)
        return list(dict.fromkeys(paths))

    def folder(self, path: str) -> list[str]:
        """The non-test Python modules of `path`'s folder at head."""
        folder = path.rpartition("/")[0]
        return sorted(
            x
            for x in self.listed()
            if x.rpartition("/")[0] == folder and x.endswith(".py") and not is_test_path(x)
        )

    def listed(self) -> list[str]:
        """Every file at head, listed once per stage (folders and packages are read from it)."""
        if self._listing is None:
            self._listing = git.git(
                self.workdir, "ls-tree", "-r", "--name-only", self.head_sha, check=False
            ).splitlines()
        return self._listing

    def package(self, path: str) -> list[str]:
        """The non-test Python modules of the package `path` is in (its topmost folder with an
        `__init__.py` at head; only `path`'s folder when it is in none), `path`'s folder first and then
        the closest folders, at most MAX_PACKAGE_MODULES."""
        listed = self.listed()
        inits = {x.rpartition("/")[0] for x in listed if x.endswith("/__init__.py")}
        folder = root = path.rpartition("/")[0]
        while root in inits and "/" in root and root.rpartition("/")[0] in inits:
            root = root.rpartition("/")[0]
        if root not in inits:
            return self.folder(path)
        mods = [x for x in listed if x.startswith(root + "/") and x.endswith(".py") and not is_test_path(x)]
        here = folder.split("/")

        def distance(x: str) -> tuple[int, str]:
            there = x.rpartition("/")[0].split("/")
            common = next(
                (i for i, (a, b) in enumerate(zip(here, there, strict=False)) if a != b),
                min(len(here), len(there)),
            )
            return (len(here) - common) + (len(there) - common), x

        return sorted(mods, key=distance)[:MAX_PACKAGE_MODULES]
