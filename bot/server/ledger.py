"""Job records, per-PR leases and once-markers kept in huey's own key/value store (SQLite or Redis alike).

huey removes a message from the queue when a worker takes it, so a worker killed with SIGKILL would lose
it. The ledger keeps every job until it is finished; a reaper puts back the jobs whose worker died.
Only huey's portable storage operations are used (put/peek/delete, put_if_empty, incr, result_items),
which is why SqliteHuey and RedisHuey run the same code.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from huey.constants import EmptyData

JOB = "job:"
LEASE = "lease:"
HOST = socket.gethostname()


def owner_id() -> str:
    return f"{HOST}:{os.getpid()}"


def owner_alive(owner: str) -> bool | None:
    """True/False for an owner on this host; None when it lives elsewhere (judge by lease expiry)."""
    host, _, pid = owner.rpartition(":")
    if host != HOST or not pid.isdigit():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Lease:
    pr: str
    gen: int
    job: str
    owner: str
    expires: float


class Ledger:
    def __init__(self, storage: Any, clock: Callable[[], float] = time.time) -> None:
        self._s = storage
        self._clock = clock

    # --- plain records -------------------------------------------------------------------------
    def get(self, key: str) -> dict[str, Any] | None:
        raw = self._s.peek_data(key)
        if raw is EmptyData:
            return None
        return json.loads(bytes(raw).decode())  # type: ignore[no-any-return]

    def put(self, key: str, value: dict[str, Any]) -> None:
        self._s.put_data(key, json.dumps(value, sort_keys=True).encode())

    def delete(self, key: str) -> None:
        self._s.delete_data(key)

    def once(self, key: str, value: str = "1") -> bool:
        """True for the first caller only (atomic in both SQLite and Redis)."""
        return bool(self._s.put_if_empty(key, value.encode()))

    def count(self, key: str, amount: int = 1) -> int:
        return int(self._s.incr(key, amount))

    def drop_counter(self, key: str) -> None:
        self._s.delete_counter(key)

    def raw_items(self, prefix: str) -> Iterator[tuple[str, str]]:
        for key, raw in self._s.result_items().items():
            k = key.decode() if isinstance(key, bytes) else key
            if k.startswith(prefix):
                yield k, bytes(raw).decode(errors="replace")

    def items(self, prefix: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for key, raw in self._s.result_items().items():
            k = key.decode() if isinstance(key, bytes) else key
            if k.startswith(prefix):
                yield k, json.loads(bytes(raw).decode())

    # --- per-PR leases: one job per PR at a time ----------------------------------------------
    def acquire(self, pr: str, job: str, owner: str, ttl: float) -> Lease | None:
        """Take the PR's lease, or take over a lease whose holder died; None while a live job holds it."""
        gen = self.count("lease-gen")
        lease = Lease(pr, gen, job, owner, self._clock() + ttl)
        if self._s.put_if_empty(LEASE + pr, self._encode(lease)):
            return lease
        held = self.lease(pr)
        if held is None or not self.stale(held):
            return None
        # Exactly one taker per stale generation, so two workers never both take it over.
        if not self.once(f"takeover:{pr}:{held.gen}"):
            return None
        self._s.put_data(LEASE + pr, self._encode(lease))
        return lease

    def lease(self, pr: str) -> Lease | None:
        data = self.get(LEASE + pr)
        return Lease(**data) if data is not None else None

    def stale(self, lease: Lease) -> bool:
        alive = owner_alive(lease.owner)
        return alive is False or (alive is None and lease.expires < self._clock())

    def renew(self, lease: Lease, ttl: float) -> Lease:
        held = self.lease(lease.pr)
        if held is None or held.gen != lease.gen:
            return lease  # taken over: the reaper judged us dead; our work is retried elsewhere
        fresh = Lease(lease.pr, lease.gen, lease.job, lease.owner, self._clock() + ttl)
        self._s.put_data(LEASE + lease.pr, self._encode(fresh))
        return fresh

    def release(self, lease: Lease) -> None:
        held = self.lease(lease.pr)
        if held is not None and held.gen == lease.gen:
            self.delete(LEASE + lease.pr)

    @staticmethod
    def _encode(lease: Lease) -> bytes:
        return json.dumps(lease.__dict__, sort_keys=True).encode()
