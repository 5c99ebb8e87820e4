"""The files a sandboxed run is given and gives back, kept out of every tree the reviewed change controls.

A run's scripts and specs are written into a folder the bot makes for that run (`given`: mode 0700,
outside the work copy, shown to the run read-only) and its results come back through a second one
(`back`, the only one of the two the run may write). Neither lies inside the work copy, so a symlink the
change commits (`.prereview-behaviour -> ~`) or a test plants while it runs cannot redirect a host write.

What the run wrote is read back through fsguard: no symlink followed, opened without blocking (a FIFO is
refused, not waited on), regular files with one link only, at most `READ_BACK_BYTES`. JSON lines are then
parsed one by one: a line nested deeper than `MAX_DEPTH` is dropped and every string is cut to
`TEXT_CHARS` characters, so nothing a run forges reaches a prompt, a finding or `literal_eval` at more
than that size. Every refusal or cut comes back as a note for the review (a refused trace is read as empty).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

from .. import fsguard
from .base import Bind

MIB = 1024 * 1024
READ_BACK_BYTES = 16 * MIB  # per file read back; an honest trace of 1000 calls is well under 2 MiB
TEXT_CHARS = 4000  # per string value read back (reprs are 400 characters by default)
MAX_DEPTH = 8  # nesting of a JSON line read back (records are 3 deep)
GIVEN = "{given}"  # placeholders in a hook's arguments and variables: the folders as the run sees them
BACK = "{back}"


class Exchange:
    """A `given` and a `back` folder for one run, removed (without following links) on exit."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="prereview-exchange-")).resolve()  # mode 0700
        self.given = self.root / "given"
        self.back = self.root / "back"
        self.given.mkdir(mode=0o700)
        self.back.mkdir(mode=0o700)

    def __enter__(self) -> Exchange:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        shutil.rmtree(self.root, ignore_errors=True)  # never follows a symlink the run left in `back`

    @property
    def binds(self) -> tuple[Bind, Bind]:
        return Bind(self.given), Bind(self.back, writable=True)

    def give(self, name: str, text: str) -> Path:
        """Write `given/name` (a plain name); its path, which is the same inside the sandbox."""
        fsguard.write_text(self.given, _plain(name), text, create=True)
        return self.given / name

    def resolve(self, value: str) -> str:
        """`value` with the {given}/{back} placeholders replaced by the folders' paths."""
        return value.replace(GIVEN, str(self.given)).replace(BACK, str(self.back))

    def take(self, name: str, what: str, max_bytes: int = READ_BACK_BYTES) -> tuple[bytes, list[str]]:
        """The bytes the run wrote to `back/name` (b"" when it wrote nothing), at most `max_bytes` (cut
        at the last line break), and notes on anything refused or cut."""
        try:
            data = fsguard.read_bytes(self.back, _plain(name), limit=max_bytes + 1)
        except fsguard.Missing:
            return b"", []
        except fsguard.UnsafePath as exc:
            why = str(exc).split(": ", 1)[-1]
            return b"", [f"{what} was refused ({why}) and read as empty"]
        except OSError as exc:
            return b"", [f"{what} was unreadable ({exc.strerror or exc}) and read as empty"]
        if len(data) <= max_bytes:
            return data, []
        data = data[:max_bytes]
        return data[: data.rfind(b"\n") + 1], [
            f"{what} was larger than {max_bytes // MIB} MiB; only its first {max_bytes // MIB} MiB read"
        ]


# The phrases of every note `take` and `json_lines` write when a cap or a refusal fires (the server's
# /metrics counts them: `counts_as_limit`).
LIMIT_PHRASES = (
    " was refused (",
    " was unreadable (",
    " MiB; only its first ",
    " characters were cut",
    " levels were dropped",
)


def counts_as_limit(note: str) -> bool:
    """Whether a review note says a read-back from the sandbox was refused or cut."""
    return any(p in note for p in LIMIT_PHRASES)


def _plain(name: str) -> str:
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"not a plain file name: {name!r}")
    return name


def json_lines(
    data: bytes | str, what: str, max_text: int = TEXT_CHARS
) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON objects of `data`, one a line (other lines skipped), every string in them cut to
    `max_text` characters, and a note when strings were cut or lines dropped for their nesting."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    out: list[dict[str, Any]] = []
    cut = [0]
    deep = 0
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except RecursionError:  # json's own nesting limit is the interpreter's recursion limit
            deep += 1
            continue
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        try:
            out.append(_clip(rec, max_text, cut, 0))
        except _TooDeep:
            deep += 1
    notes = []
    if cut[0]:
        notes.append(f"{what}: {cut[0]} value(s) longer than {max_text} characters were cut")
    if deep:
        notes.append(f"{what}: {deep} line(s) nested deeper than {MAX_DEPTH} levels were dropped")
    return out, notes


def to_text(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


class _TooDeep(ValueError):
    pass


def _clip(value: Any, limit: int, cut: list[int], depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise _TooDeep()
    if isinstance(value, str):
        if len(value) > limit:
            cut[0] += 1
            return value[:limit] + "…"
        return value
    if isinstance(value, dict):
        return {
            _clip(str(k), limit, cut, depth + 1): _clip(v, limit, cut, depth + 1) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_clip(v, limit, cut, depth + 1) for v in value]
    return value
