"""bubblewrap: the work copy writable, the system read-only, no network, a clean env, limits on everything.

Layout inside the sandbox: /usr (+ the /bin, /lib… links), a few /etc files, the Python interpreter
prereview runs on (read-only, so a Python project's tests find pytest) and `ro_paths` from config; the
work copy at its own path, read-write; an own /tmp (size-capped tmpfs) with HOME=/tmp/home. Nothing
else of the host is visible: not ~/.ssh, not the reviewed repository's .git, not the bot's config.
Limits: wall time (the whole process group and PID namespace are killed), address space, file size and
processes via prlimit, and a pids cgroup where one can be created (needed when running as root, for
whom the kernel does not enforce RLIMIT_NPROC).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..config import SandboxConfig
from ..types import PrereviewError
from .base import RunResult, clean_env, run_process

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_ENTRIES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "ssl",
    "ca-certificates",
    "localtime",
    "timezone",
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "mime.types",
    "os-release",
    "debian_version",
)
INNER_HOME = "/tmp/home"  # noqa: S108 (the sandbox's own tmpfs)
CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))


class BubblewrapSandbox:
    name = "bubblewrap"
    warning: str | None = None

    def __init__(self, cfg: SandboxConfig) -> None:
        self.cfg = cfg
        self._bwrap = shutil.which("bwrap")
        self._prlimit = shutil.which("prlimit")

    def run(self, argv: Sequence[str], *, cwd: Path, timeout: float) -> RunResult:
        if self._bwrap is None:
            raise PrereviewError(
                "bubblewrap is not installed; apt-get install bubblewrap, or pick another sandbox.backend"
            )
        cwd = cwd.resolve()
        env = clean_env(INNER_HOME, self._path_var())
        with _pids_cgroup(self.cfg.max_processes) as procs_file:
            cmd = [*self._bwrap_args(cwd), "--", *self._limits(), *argv]
            if procs_file is not None:  # join the cgroup before exec, so every descendant is counted
                cmd = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(procs_file), *cmd]
            return run_process(
                cmd,
                cwd=cwd,
                env=env,
                timeout=timeout,
                max_output=self.cfg.max_output_bytes,
                backend=self.name,
            )

    def _path_var(self) -> str:
        return ":".join([str(Path(sys.prefix) / "bin"), "/usr/local/bin", "/usr/bin", "/bin"])

    def _bwrap_args(self, cwd: Path) -> list[str]:
        args = [str(self._bwrap), "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        if os.geteuid() == 0:  # run as an ordinary user inside, even when the bot runs as root
            args += ["--uid", "65534", "--gid", "65534"]
        for d in SYSTEM_DIRS:
            p = Path(d)
            if p.is_symlink():
                args += ["--symlink", os.readlink(p), d]
            elif p.is_dir():
                args += ["--ro-bind", d, d]
        for e in ETC_ENTRIES:
            if Path("/etc", e).exists():
                args += ["--ro-bind", f"/etc/{e}", f"/etc/{e}"]
        mem = self.cfg.memory_mb * 1024 * 1024
        args += [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            str(mem),
            "--tmpfs",
            "/tmp",  # noqa: S108 (an own tmpfs inside the sandbox)
            "--dir",
            INNER_HOME,
        ]
        # after the tmpfs: a venv (or toolchain) that lives under /tmp must stay visible
        for ro in self._readonly_paths():
            args += ["--ro-bind", ro, ro]
        args += ["--bind", str(cwd), str(cwd), "--remount-ro", "/", "--chdir", str(cwd)]
        return args

    def _readonly_paths(self) -> list[str]:
        """The interpreter (venv and its base installation) plus configured extra toolchains."""
        paths = {sys.prefix, sys.base_prefix, str(Path(sys.executable).resolve().parent.parent)}
        paths |= {str(Path(p).expanduser()) for p in self.cfg.ro_paths}
        out = []
        for p in sorted(paths):
            if Path(p).exists() and not any(p == d or p.startswith(d + "/") for d in SYSTEM_DIRS):
                out.append(p)
        return out

    def _limits(self) -> list[str]:
        if self._prlimit is None:
            return []
        mem = self.cfg.memory_mb * 1024 * 1024
        return [self._prlimit, f"--as={mem}", f"--fsize={mem}", f"--nproc={self.cfg.max_processes}", "--"]


@contextmanager
def _pids_cgroup(limit: int) -> Iterator[Path | None]:
    """A fresh pids cgroup capped at `limit` when this process may create one (else None)."""
    group = _make_cgroup(limit)
    try:
        yield None if group is None else group / "cgroup.procs"
    finally:
        if group is not None:
            _remove_cgroup(group)


def _make_cgroup(limit: int) -> Path | None:
    for root in CGROUP_ROOTS:
        here = _own_cgroup(root)
        if here is None:
            continue
        group = here / f"prereview-{uuid.uuid4().hex[:12]}"
        try:
            group.mkdir()
        except OSError:
            continue
        try:
            (group / "pids.max").write_text(str(limit))
            return group
        except OSError:
            _remove_cgroup(group)
    return None


def _own_cgroup(root: Path) -> Path | None:
    """The cgroup this process is in, under `root` (the v1 pids hierarchy or the v2 unified one)."""
    v1 = root.name == "pids"
    if not v1 and not (root / "cgroup.controllers").exists():
        return None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        if (v1 and "pids" in controllers.split(",")) or (not v1 and controllers == ""):
            p = root / rel.lstrip("/")
            return p if p.is_dir() else None
    return None


def _remove_cgroup(group: Path) -> None:
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
