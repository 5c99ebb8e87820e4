"""The Sandbox protocol, its RunResult, and the capped, killable process runner the local backends share."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

# The only variables a sandboxed command sees (values are set by the backend, never copied from the host
# unless listed in PASS_THROUGH): no tokens, no GITHUB_*/CI_* secrets, no SSH agent.
PASS_THROUGH = ("LANG", "LC_ALL", "TZ")


@dataclass(frozen=True)
class RunResult:
    """What a command did. Failing tests are a result (returncode != 0), never an exception."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False
    killed_reason: str | None = None  # "timeout", "memory", "output", ... when the sandbox stopped it
    seconds: float = 0.0
    truncated: bool = False  # output was longer than the cap (head and tail kept)
    backend: str = ""

    @property
    def output(self) -> str:
        return self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr


@dataclass(frozen=True)
class Bind:
    """A bot-owned host folder shown to one run at its own path: read-only unless `writable` (see
    exchange.py: the scripts and specs given to a run, the folder its results come back through)."""

    path: Path
    writable: bool = False


class Sandbox(Protocol):
    name: str
    warning: str | None  # shown in the review's notes (e.g. "tests ran without a sandbox")
    bounds: str  # which limits apply to a run as a whole ("memory 2048 MiB in all (cgroup), ..."), for logs

    def run(
        self, argv: Sequence[str], *, cwd: Path, timeout: float, binds: Sequence[Bind] = ()
    ) -> RunResult: ...


def clean_env(home: str, path: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {"PATH": path, "HOME": home, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": "/tmp"}  # noqa: S108 (inside the sandbox)
    for k in PASS_THROUGH:
        if k in os.environ:
            env[k] = os.environ[k]
    env.update(extra or {})
    return env


class _Capped:
    """Keeps the first and last `cap // 2` bytes of a stream and drains (discards) the middle."""

    def __init__(self, cap: int) -> None:
        self.half = max(1, cap // 2)
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_len = 0
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail.append(data)
            self.tail_len += len(data)
            while self.tail_len - len(self.tail[0]) >= self.half:
                self.tail_len -= len(self.tail.popleft())

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + self.tail_len

    def text(self) -> str:
        tail = b"".join(self.tail)[-self.half :]
        sep = b"\n[... output truncated ...]\n" if self.truncated else b""
        return (bytes(self.head) + sep + tail).decode("utf-8", "replace")


def _drain(stream: IO[bytes], sink: _Capped) -> None:
    for chunk in iter(lambda: stream.read(65536), b""):
        sink.feed(chunk)


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path | None,
    env: Mapping[str, str],
    timeout: float,
    max_output: int,
    backend: str,
    watch: Callable[[], str | None] | None = None,
    watch_interval: float = 0.25,
) -> RunResult:
    """Run argv in a new session; on timeout kill the whole process group. Output is capped.

    `watch`, when given, is called every `watch_interval` seconds while the command runs and once after;
    a reason it returns ("disk") kills the group and becomes the result's killed_reason."""
    t0 = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    out, err = _Capped(max_output // 2), _Capped(max_output // 2)
    readers = [
        threading.Thread(target=_drain, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, err), daemon=True),
    ]
    for r in readers:
        r.start()
    timed_out, reason = False, None
    deadline = t0 + timeout
    while True:
        step = deadline - time.monotonic()
        if watch is not None:
            step = min(step, watch_interval)
        try:
            proc.wait(timeout=max(step, 0.0))
            break
        except subprocess.TimeoutExpired:
            pass
        if watch is not None and (reason := watch()):
            break
        if time.monotonic() >= deadline:
            timed_out = True
            break
    _kill_group(proc.pid)
    proc.wait()
    if reason is None and watch is not None and not timed_out:
        reason = watch()
    for r in readers:
        r.join(timeout=5)  # a grandchild that escaped the group could hold the pipe; don't wait forever
    return RunResult(
        returncode=-signal.SIGKILL if timed_out or reason else proc.returncode,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        killed_reason="timeout" if timed_out else reason,
        seconds=round(time.monotonic() - t0, 3),
        truncated=out.truncated or err.truncated,
        backend=backend,
    )


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
