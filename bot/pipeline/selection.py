"""Which changed files the stages look at: one selection per review, made once and used by every stage
(model, scanners, behaviour, patches) — `review.include`/`review.exclude`, the default lock, vendored,
generated and not-code skips (`review.skip_defaults`), binary and deleted files, and files over
`review.max_file_lines`. `Review.coverage.skipped` lists each file left out with its reason.

`review.max_file_lines` bounds the model's prompt, so a file left out for its length alone is still read
by the behaviour stage (`evidence_diff`): it runs the changed functions' calls at base and head and needs
no prompt of the whole file, and its own budget (`behaviour.budget_seconds`) bounds its work.

One exception, on purpose: the secrets scanner still reads files left out by the defaults or by their
length (a credential committed under vendor/ or into a generated file is leaked all the same), but not
files the project left out itself with `review.include`/`review.exclude` (fixtures with fake keys)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from ..change.diff import Diff, FileDiff
from ..config import ReviewConfig
from ..findings import chunks
from ..types import Skipped


@dataclass(frozen=True)
class Selection:
    files: tuple[FileDiff, ...]  # what the stages review
    skipped: tuple[Skipped, ...]  # the rest, each with its reason
    all_files: tuple[FileDiff, ...] = ()  # the whole change, in its order

    @property
    def diff(self) -> Diff:
        """The change as the stages see it: the selected files only."""
        return Diff(self.files)

    @property
    def evidence_diff(self) -> Diff:
        """What the behaviour stage compares: the selected files and those left out only for their length
        (a prompt limit), in the change's order."""
        long = {s.path for s in self.skipped if s.reason.startswith(chunks.TOO_LARGE)}
        return Diff(tuple(f for f in self.all_files if f.path in self._paths or f.path in long))

    @cached_property
    def _paths(self) -> frozenset[str]:
        return frozenset(f.path for f in self.files)

    @cached_property
    def _excluded(self) -> frozenset[str]:
        return frozenset(s.path for s in self.skipped if s.reason in chunks.USER_RULES)

    def allows(self, path: str) -> bool:
        return path in self._paths

    def allows_secrets(self, path: str) -> bool:
        """The secrets scanner's wider view: every file but those the project excluded itself."""
        return path not in self._excluded


def select(diff: Diff, cfg: ReviewConfig, head_lines: Callable[[str], int | None]) -> Selection:
    files, skipped = chunks.select_files(diff, cfg, head_lines)
    return Selection(tuple(files), tuple(skipped), tuple(diff.files))
