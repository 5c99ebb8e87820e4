"""Bounds on a sandboxed run as a whole, not per process: memory and process count, and the writable tree.

Memory (`memory_total_mb`, default 2 × `memory_mb`) and processes, first that works on this host:
1. `cgroup`: a fresh cgroup below this process's own (v1 `memory` + `pids` hierarchies, or v2 with those
   controllers delegated), with memory (+ swap) and pids capped; the run joins it before bwrap starts, so
   every descendant, and the tmpfs pages they fill, are counted together. Needs write access to the cgroup
   tree (root, or a delegated subtree).
2. `systemd`: `systemd-run --user --scope -p MemoryMax=… -p MemorySwapMax=0 -p TasksMax=…` (an ordinary
   user on a systemd host whose user manager has the memory controller delegated; checked once).
3. `rlimit`: per process only, RLIMIT_AS `memory_mb` for each of at most `max_processes` processes
   (RLIMIT_NPROC, plus a pids cgroup where one can be made): max_processes × memory_mb in all. The
   sandbox's warning says so, and the review carries it as a note.
In every case each process also has a cap of `memory_mb`, so one greedy test gets MemoryError (a failing
test) before the total bound kills the run: RLIMIT_DATA under a cgroup or scope (address space reserved
and not used, as WebAssembly engines do, is free), RLIMIT_AS in the `rlimit` case.

The writable tree (the work copy) grows by at most `disk_mb`: RLIMIT_FSIZE caps each file, and a watchdog
measures the tree every WATCH_INTERVAL seconds and kills the run once it is over (a writer can overshoot
by what it writes in one interval).
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")
WATCH_INTERVAL = 0.25
MAX_TREE_ENTRIES = 100_000  # files + directories a run may leave in the work copy
# Joins every cgroup named before "--", then execs the rest (the first argument is the count).
JOIN = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"'


@dataclass
class Groups:
    """The cgroups made for one run, and what they bound."""

    dirs: list[Path] = field(default_factory=list)
    memory: Path | None = None  # the group whose memory is capped
    pids: bool = False

    def wrap(self, cmd: list[str]) -> list[str]:
        if not self.dirs:
            return cmd
        return [
            "/bin/sh",
            "-c",
            JOIN,
            "sh",
            str(len(self.dirs)),
            *(str(d / "cgroup.procs") for d in self.dirs),
            *cmd,
        ]

    def oom_killed(self) -> bool:
        """True when the kernel killed a process of the run for memory."""
        if self.memory is None:
            return False
        for name in ("memory.events", "memory.oom_control"):  # v2, v1
            try:
                text = (self.memory / name).read_text()
            except OSError:
                continue
            for line in text.splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and value.strip().isdigit():
                    return int(value) > 0
        return False


@contextmanager
def cgroups(memory_bytes: int, max_processes: int) -> Iterator[Groups]:
    """Fresh cgroups capping memory and processes, where this process may make them; removed after."""
    groups = Groups()
    try:
        for root, controllers in _hierarchies():
            here = _own_cgroup(root, controllers)
            if here is None:
                continue
            group = here / f"prereview-{uuid.uuid4().hex[:12]}"
            try:
                group.mkdir()
            except OSError:
                continue
            got = _configure(group, controllers, memory_bytes, max_processes)
            if not got:
                _remove(group)
                continue
            groups.dirs.append(group)
            if "memory" in got:
                groups.memory = group
            groups.pids = groups.pids or "pids" in got
        yield groups
    finally:
        for d in groups.dirs:
            _remove(d)


def _hierarchies() -> list[tuple[Path, tuple[str, ...]]]:
    if (CGROUP / "cgroup.controllers").exists():  # pure v2
        return [(CGROUP, ("memory", "pids"))]
    return [(CGROUP / "memory", ("memory",)), (CGROUP / "pids", ("pids",))]


def _own_cgroup(root: Path, controllers: tuple[str, ...]) -> Path | None:
    """The cgroup this process is in, under `root` (a v1 controller hierarchy or the v2 unified one)."""
    v2 = root == CGROUP and (root / "cgroup.controllers").exists()
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, rel = line.split(":", 2)
        if (v2 and names == "") or (not v2 and set(controllers) <= set(names.split(","))):
            p = root / rel.lstrip("/")
            return p if p.is_dir() else None
    return None


def _configure(group: Path, controllers: tuple[str, ...], memory_bytes: int, procs: int) -> set[str]:
    """Write the limits the group offers; the controllers actually capped."""
    settings = {
        "memory": [  # the first file of each list must be writable; the rest (swap) where present
            ("memory.max", str(memory_bytes)),
            ("memory.limit_in_bytes", str(memory_bytes)),
            ("memory.swap.max", "0"),
            ("memory.memsw.limit_in_bytes", str(memory_bytes)),
        ],
        "pids": [("pids.max", str(procs))],
    }
    got = set()
    for c in controllers:
        for name, value in settings[c]:
            f = group / name
            if not f.exists():
                continue
            try:
                f.write_text(value)
            except OSError:
                continue
            if name in ("memory.max", "memory.limit_in_bytes", "pids.max"):
                got.add(c)
    return got


def _remove(group: Path) -> None:
    for _ in range(100):
        try:
            pids = [int(x) for x in (group / "cgroup.procs").read_text().split()]
        except OSError:
            pids = []
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.05)


# ---------------------------------------------------------------- systemd user scope


def systemd_scope(memory_bytes: int, max_processes: int) -> list[str]:
    """The systemd-run prefix for a bounded user scope ([] when none can be made here)."""
    exe = shutil.which("systemd-run")
    if exe is None or not _systemd_enforces(exe):
        return []
    return [
        exe,
        "--user",
        "--scope",
        "--quiet",
        "--collect",
        "-p",
        f"MemoryMax={memory_bytes}",
        "-p",
        "MemorySwapMax=0",
        "-p",
        f"TasksMax={max_processes}",
        "--",
    ]


@functools.cache
def _systemd_enforces(exe: str) -> bool:
    """Does a user scope here really get a memory cap? (Checked once: the scope's memory.max is read.)"""
    probe = [exe, "--user", "--scope", "--quiet", "--collect", "-p", "MemoryMax=64M", "--"]
    try:
        proc = subprocess.run(
            [*probe, "cat", "/proc/self/cgroup"], capture_output=True, text=True, timeout=15, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    if proc.returncode != 0:
        return False
    rel = next((ln.split(":", 2)[2] for ln in proc.stdout.splitlines() if ln.startswith("0::")), None)
    if rel is None:
        return False
    try:
        return (CGROUP / rel.lstrip("/") / "memory.max").read_text().strip() == str(64 * 1024 * 1024)
    except OSError:
        return False


# ---------------------------------------------------------------- the writable tree


def tree_usage(root: Path, limit: int) -> tuple[int, int]:
    """(bytes allocated, entries) under root, symlinks not followed; stops counting past `limit` bytes."""
    used, entries, stack = 0, 0, [str(root)]
    while stack:
        try:
            it = os.scandir(stack.pop())
        except OSError:
            continue
        with it:
            for e in it:
                entries += 1
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                used += st.st_blocks * 512
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                if used > limit or entries > MAX_TREE_ENTRIES:
                    return used, entries
    return used, entries


def tree_watch(root: Path, allowance: int) -> Callable[[], str | None]:
    """A check for run_process: "disk" once the tree has grown by more than `allowance` bytes (or holds
    more than MAX_TREE_ENTRIES entries) since now."""
    start, start_entries = tree_usage(root, 1 << 62)
    limit = start + allowance

    def check() -> str | None:
        used, entries = tree_usage(root, limit)
        return "disk" if used > limit or entries > max(MAX_TREE_ENTRIES, start_entries * 2) else None

    return check
