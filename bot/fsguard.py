"""Reading and writing files inside a tree the reviewed change controls, without ever leaving it.

A change can add symlinks (`0link.py -> /home/bot/.ssh/id_rsa`, a directory `pkg -> /etc`), and a test run
in the sandbox can replace a file of the work copy with one. The host side (patch verification, the fix
agent's tools, `prereview fix --apply`) must therefore never follow a link: every path is repository
relative, every component is opened with O_NOFOLLOW relative to its parent directory's descriptor (no
race between a check and the use), and only regular files with a single link are read or written.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from .types import PrereviewError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # NONBLOCK: a FIFO fails instead of hanging


class UnsafePath(PrereviewError):
    """The path leaves the tree, goes through a symlink, or is not a regular file."""


class Missing(UnsafePath):
    """Nothing at that path (or a directory on the way is missing)."""


def parts(rel: str) -> tuple[str, ...]:
    """The components of a repository-relative path; UnsafePath for absolute, `..`, empty or NUL paths."""
    if not rel or "\x00" in rel or rel.startswith("/"):
        raise UnsafePath(f"refused path {rel!r}: not a relative path inside the tree")
    out = tuple(p for p in PurePosixPath(rel).parts if p != ".")
    if not out or ".." in out:
        raise UnsafePath(f"refused path {rel!r}: it leaves the tree")
    return out


def _open_dir(root: Path, comps: tuple[str, ...]) -> int:
    """A descriptor of root/comps..., each directory opened without following a symlink."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for c in comps:
            nxt = os.open(c, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except OSError:
        os.close(fd)
        raise
    return fd


def _why(rel: str, exc: OSError) -> UnsafePath:
    if exc.errno == errno.ENOENT:
        return Missing(f"no such file: {rel}")
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return UnsafePath(f"refused {rel}: it is a symlink or lies under one")
    return UnsafePath(f"refused {rel}: {exc.strerror or exc}")


def _open_file(root: Path, rel: str, flags: int, mode: int = 0o644) -> int:
    comps = parts(rel)
    try:
        dfd = _open_dir(root, comps[:-1])
    except OSError as exc:
        raise _why(rel, exc) from None
    try:
        fd = os.open(comps[-1], flags | _NOFOLLOW, mode, dir_fd=dfd)
    except OSError as exc:
        raise _why(rel, exc) from None
    finally:
        os.close(dfd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise UnsafePath(f"refused {rel}: not a regular file")
    os.set_blocking(fd, True)
    return fd


def read_bytes(root: Path, rel: str, limit: int | None = None) -> bytes:
    """The file's bytes (at most `limit`); UnsafePath when it is not a regular file inside root."""
    fd = _open_file(root, rel, os.O_RDONLY)
    with os.fdopen(fd, "rb") as fh:
        return fh.read() if limit is None else fh.read(limit)


def read_text(root: Path, rel: str, limit: int | None = None) -> str | None:
    """The file's text, or None when it is absent; UnsafePath when reading would leave the tree."""
    try:
        return read_bytes(root, rel, limit).decode("utf-8", "replace")
    except Missing:
        return None


def write_text(root: Path, rel: str, text: str, *, create: bool = False) -> None:
    """Replace a regular file inside root (create it too when `create`; its directory must exist).
    Refuses symlinks as the target or anywhere above it, `..`, absolute paths, FIFOs, devices, hardlinks."""
    flags = os.O_WRONLY | os.O_TRUNC | (os.O_CREAT if create else 0)
    fd = _open_file(root, rel, flags)
    with os.fdopen(fd, "wb") as fh:
        fh.write(text.encode("utf-8"))


def entry(root: Path, rel: str) -> os.stat_result | None:
    """lstat of root/rel through no symlinked parent; None when absent or unreachable that way."""
    try:
        comps = parts(rel)
    except UnsafePath:
        return None
    try:
        dfd = _open_dir(root, comps[:-1])
    except OSError:
        return None
    try:
        return os.stat(comps[-1], dir_fd=dfd, follow_symlinks=False)
    except OSError:
        return None
    finally:
        os.close(dfd)


def is_dir(root: Path, rel: str) -> bool:
    """A real directory inside root (no symlink on the way); "." or "" is root itself."""
    if rel in ("", "."):
        return True
    st = entry(root, rel)
    return st is not None and stat.S_ISDIR(st.st_mode)


def is_file(root: Path, rel: str) -> bool:
    st = entry(root, rel)
    return st is not None and stat.S_ISREG(st.st_mode)


def files(root: Path) -> Iterator[str]:
    """Relative paths of the regular files under root, sorted; symlinks (files or dirs) are never followed."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                yield os.path.relpath(full, root)
