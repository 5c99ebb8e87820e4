"""docker (via the docker SDK): image from config, no network, memory/CPU/pids limits, container removed.

The work copy is bind-mounted read-write at its own path and is the working directory; a run's exchange
folders (exchange.py) are mounted at their own paths, the given one read-only; nothing else of the host is
mounted. The image must contain the project's test toolchain (e.g. an image with pytest for
a Python project): set `sandbox.image`. The engine is reached lazily (DOCKER_HOST or the local socket)
on the first run, never in the constructor.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config import SandboxConfig
from ..types import PrereviewError, install_extra
from .base import Bind, RunResult, _Capped


class DockerSandbox:
    name = "docker"
    warning: str | None = None

    def __init__(self, cfg: SandboxConfig) -> None:
        self.cfg = cfg
        self._client: Any = None
        self.bounds = (
            f"memory {cfg.memory_mb} MiB and {cfg.max_processes} processes in all (container); "
            "/tmp 256 MiB; work copy not capped"  # noqa: S108 (describes the container's tmpfs)
        )

    def client(self) -> Any:
        if self._client is None:
            try:
                import docker
            except ImportError:
                raise PrereviewError(
                    f"the docker sandbox needs the docker SDK; {install_extra('docker')}"
                ) from None
            try:
                self._client = docker.from_env()
                self._client.ping()
            except docker.errors.DockerException as exc:
                raise PrereviewError(
                    f"no Docker engine reachable ({str(exc)[:120]}); start Docker or set DOCKER_HOST, or use "
                    "sandbox.backend: bubblewrap"
                ) from None
        return self._client

    def run(self, argv: Sequence[str], *, cwd: Path, timeout: float, binds: Sequence[Bind] = ()) -> RunResult:
        import docker
        import requests

        client = self.client()
        cwd = cwd.resolve()
        volumes = {str(cwd): {"bind": str(cwd), "mode": "rw"}}
        for b in binds:
            volumes[str(b.path)] = {"bind": str(b.path), "mode": "rw" if b.writable else "ro"}
        t0 = time.monotonic()
        try:
            container = client.containers.run(
                self.cfg.image,
                list(argv),
                detach=True,
                working_dir=str(cwd),
                volumes=volumes,
                environment={"HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"},  # noqa: S108
                network_mode="none",
                mem_limit=f"{self.cfg.memory_mb}m",
                memswap_limit=f"{self.cfg.memory_mb}m",
                nano_cpus=int(self.cfg.cpus * 1e9),
                pids_limit=self.cfg.max_processes,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                tmpfs={"/tmp": "rw,size=256m"},  # noqa: S108 (container tmpfs)
            )
        except docker.errors.ImageNotFound:
            raise PrereviewError(
                f"docker image '{self.cfg.image}' not found; pull it or set sandbox.image"
            ) from None
        timed_out = False
        try:
            try:
                status = container.wait(timeout=timeout)
                code = int(status.get("StatusCode", -1))
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                timed_out, code = True, -9
                container.kill()
            container.reload()
            oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
            out, err = _Capped(self.cfg.max_output_bytes // 2), _Capped(self.cfg.max_output_bytes // 2)
            out.feed(container.logs(stdout=True, stderr=False))
            err.feed(container.logs(stdout=False, stderr=True))
        finally:
            container.remove(force=True)
        reason = "timeout" if timed_out else "memory" if oom else None
        return RunResult(
            returncode=code,
            stdout=out.text(),
            stderr=err.text(),
            timed_out=timed_out,
            killed_reason=reason,
            seconds=round(time.monotonic() - t0, 3),
            truncated=out.truncated or err.truncated,
            backend=self.name,
        )
