"""bubblewrap: the work copy writable, the system read-only, no network, a clean env, limits on everything.

Layout inside the sandbox: /usr (+ the /bin, /lib… links), a few /etc files, the Python interpreter
prereview runs on (read-only, so a Python project's tests find pytest; of its site-packages only pytest
and its requirements, see pyview.py) and `ro_paths` from config; the
work copy at its own path, read-write; a run's exchange folders (exchange.py) at their own paths, the
given one read-only; an own /tmp (size-capped tmpfs) with HOME=/tmp/home and an own
small /dev/shm (`shm_mb`). Nothing else of the host is visible: not ~/.ssh, not the reviewed repository's
.git, not the bot's config.
Limits: wall time (the whole process group and PID namespace are killed); memory and processes for the
run as a whole where the host allows it (a cgroup, else a systemd user scope; see limits.py), else per
process (address space and RLIMIT_NPROC via prlimit); file size via prlimit; the work copy's growth
(`disk_mb`, watched). `bounds` says which applied; `warning` (a review note) when only per-process ones did.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..config import SandboxConfig
from ..types import PrereviewError
from . import limits, pyview
from .base import Bind, RunResult, clean_env, run_process

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
MIB = 1024 * 1024


class BubblewrapSandbox:
    name = "bubblewrap"

    def __init__(self, cfg: SandboxConfig) -> None:
        self.cfg = cfg
        self._bwrap = shutil.which("bwrap")
        self._prlimit = shutil.which("prlimit")
        self.memory_bound = ""  # "cgroup" | "systemd" | "rlimit": what bounded the last run's memory
        self._started = False  # bwrap has started a sandbox here once (checked before the first run)

    def run(self, argv: Sequence[str], *, cwd: Path, timeout: float, binds: Sequence[Bind] = ()) -> RunResult:
        if self._bwrap is None:
            raise PrereviewError(
                "bubblewrap is not installed; apt-get install bubblewrap, or pick another sandbox.backend"
            )
        cwd = cwd.resolve()
        if not self._started:
            self._check_starts(cwd)
        env = clean_env(INNER_HOME, self._path_var())
        total = self.total_mb * MIB
        with limits.cgroups(total, self.cfg.max_processes) as groups:
            # join the cgroups before exec, so every descendant (and the tmpfs pages they fill) is counted
            whole = groups.memory is not None
            cmd = groups.wrap([*self._bwrap_args(cwd, binds), "--", *self._limits(whole), *argv])
            scope = [] if whole else limits.systemd_scope(total, self.cfg.max_processes)
            if scope:  # one hierarchy on systemd hosts: the scope replaces our own groups
                cmd = [*scope, *self._bwrap_args(cwd, binds), "--", *self._limits(True), *argv]
            self.memory_bound = "cgroup" if groups.memory is not None else "systemd" if scope else "rlimit"
            res = run_process(
                cmd,
                cwd=cwd,
                env=env,
                timeout=timeout,
                max_output=self.cfg.max_output_bytes,
                backend=self.name,
                watch=_watch_all([cwd, *(b.path for b in binds if b.writable)], self.cfg.disk_mb * MIB),
            )
            if res.killed_reason is None and groups.oom_killed():
                res = replace(res, killed_reason="memory")
        if res.killed_reason in ("memory", "disk"):
            what = (
                f"the run used more than sandbox.memory_total_mb ({self.total_mb} MiB) in all"
                if res.killed_reason == "memory"
                else f"the run wrote more than sandbox.disk_mb ({self.cfg.disk_mb} MiB) into the work copy"
            )
            res = replace(res, stderr=f"{res.stderr}\n[prereview sandbox: killed, {what}]".lstrip("\n"))
        return res

    def _check_starts(self, cwd: Path) -> None:
        """Can bwrap make its namespaces here? (Hosts without unprivileged user namespaces cannot.) Checked
        with a command of our own, so a test printing "bwrap: …" cannot pass for a broken sandbox."""
        why = self.preflight(cwd)
        if why is not None:
            raise PrereviewError(
                f"bubblewrap cannot start a sandbox on this host ({why}); allow unprivileged user namespaces "
                "(sysctl kernel.unprivileged_userns_clone=1, or the AppArmor userns rule) and an unmasked "
                "/proc (containers: --security-opt seccomp=unconfined, systempaths=unconfined), or use "
                "sandbox.backend: docker"
            )

    def preflight(self, cwd: Path) -> str | None:
        """Start the sandbox with the argv every run uses (--proc, --dev, the tmpfs mounts, the binds) and
        run `exit 0` in it: None when it starts, else bwrap's first error line. A weaker probe (`--ro-bind /
        / true`) passes where /proc is masked (Docker executors, `container:` jobs, Kubernetes runners)."""
        if self._bwrap is None:
            return "bubblewrap is not installed"
        proc = run_process(
            [*self._bwrap_args(cwd.resolve()), "--", "/bin/sh", "-c", "exit 0"],
            cwd=cwd,
            env=clean_env(INNER_HOME, self._path_var()),
            timeout=60,
            max_output=4000,
            backend=self.name,
        )
        if proc.returncode != 0:
            return (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[0][:200]
        self._started = True
        return None

    def _probe(self) -> str:
        """The memory bound a run would get now (a cgroup is made and removed; systemd checked once)."""
        total = self.total_mb * MIB
        with limits.cgroups(total, self.cfg.max_processes) as groups:
            if groups.memory is not None:
                return "cgroup"
        return "systemd" if limits.systemd_scope(total, self.cfg.max_processes) else "rlimit"

    @property
    def total_mb(self) -> int:
        return self.cfg.memory_total_mb or 2 * self.cfg.memory_mb

    @property
    def bounds(self) -> str:
        c = self.cfg
        self.memory_bound = self.memory_bound or self._probe()
        if self.memory_bound in ("cgroup", "systemd"):
            mem = (
                f"memory {c.memory_mb} MiB per process, {self.total_mb} MiB and {c.max_processes} processes "
                f"in all ({self.memory_bound})"
            )
        else:
            mem = f"memory {c.memory_mb} MiB per process × {c.max_processes} processes (rlimit)"
        return f"{mem}; /tmp {c.memory_mb} MiB, /dev/shm {c.shm_mb} MiB; work copy +{c.disk_mb} MiB"

    @property
    def warning(self) -> str | None:
        """A review note when memory can only be bounded per process."""
        self.memory_bound = self.memory_bound or self._probe()
        if self.memory_bound != "rlimit":
            return None
        return (
            f"the sandbox bounded memory per process only (no writable memory cgroup or systemd user scope "
            f"on this host): up to {self.cfg.max_processes} processes × {self.cfg.memory_mb} MiB"
        )

    def _path_var(self) -> str:
        return ":".join([str(Path(sys.prefix) / "bin"), "/usr/local/bin", "/usr/bin", "/bin"])

    def _bwrap_args(self, cwd: Path, binds: Sequence[Bind] = ()) -> list[str]:
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
        mem = self.cfg.memory_mb * MIB
        args += [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            str(self.cfg.shm_mb * MIB),
            "--tmpfs",
            "/dev/shm",  # noqa: S108 (an own small one: --dev's /dev is a tmpfs half the host's memory)
            "--size",
            str(mem),
            "--tmpfs",
            "/tmp",  # noqa: S108 (an own tmpfs inside the sandbox)
            "--dir",
            INNER_HOME,
        ]
        # after the tmpfs: a venv (or toolchain) that lives under /tmp must stay visible
        readonly = self._readonly_paths()
        for ro in readonly:
            args += ["--ro-bind", ro, ro]
        # of prereview's own site-packages only pytest (not prereview, its model, its dependencies)
        args += pyview.bwrap_args(readonly, [str(Path(p).expanduser()) for p in self.cfg.ro_paths])
        args += ["--bind", str(cwd), str(cwd)]
        for b in binds:  # a run's exchange folders (exchange.py), at their own paths
            args += ["--bind" if b.writable else "--ro-bind", str(b.path), str(b.path)]
        args += ["--remount-ro", "/", "--chdir", str(cwd)]
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

    def _limits(self, whole: bool) -> list[str]:
        """Per-process caps. Where the run's memory is bounded as a whole (`whole`: a cgroup or a systemd
        scope), a process's cap is on its data (RLIMIT_DATA: heap and private writable mappings), not
        its address space: a greedy test still gets MemoryError, while reserving address space it
        does not use works. WebAssembly engines do that (Node reserves ~10 GiB per Wasm memory, and
        the JVM and Go reserve their heaps); under RLIMIT_AS, `WebAssembly.instantiate()` runs out of
        memory and a TypeScript project whose tooling uses Wasm cannot run its tests. Without a whole-run
        bound RLIMIT_AS stays: there it is what bounds shared mappings too."""
        if self._prlimit is None:
            return []
        mem = self.cfg.memory_mb * MIB
        fsize = min(mem, self.cfg.disk_mb * MIB)
        cap = f"--data={mem}" if whole else f"--as={mem}"
        return [self._prlimit, cap, f"--fsize={fsize}", f"--nproc={self.cfg.max_processes}", "--"]


def _watch_all(trees: Sequence[Path], allowance: int) -> Callable[[], str | None]:
    """One disk watch over every writable tree of a run (each may grow by `allowance`)."""
    watches = [limits.tree_watch(t, allowance) for t in trees]

    def check() -> str | None:
        return next((r for w in watches if (r := w()) is not None), None)

    return check
