"""Small shared server state in the queue's store: seen deliveries, per-repo rate, paused PRs."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from .ledger import Ledger


class ServerState:
    def __init__(self, storage: Any, clock: Callable[[], float] = time.time) -> None:
        self._l = Ledger(storage, clock)
        self._clock = clock

    def first_delivery(self, forge: str, delivery: str) -> bool:
        """True the first time a delivery id is seen (GitHub and GitLab redeliver with the same id)."""
        return self._l.once(f"delivery:{forge}:{delivery}", str(int(self._clock())))

    def forget_delivery(self, forge: str, delivery: str) -> None:
        self._l.delete(f"delivery:{forge}:{delivery}")

    def first_event(self, forge: str, identity: str) -> bool:
        """True the first time an event (`events.identity`) is seen, whatever its delivery id. Kept under
        the `delivery:` prefix, so `sweep` forgets it with the deliveries."""
        return self._l.once(f"delivery:{forge}:event:{identity}", str(int(self._clock())))

    def forget_event(self, forge: str, identity: str) -> None:
        self._l.delete(f"delivery:{forge}:event:{identity}")

    def within_rate(self, repo: str, per_minute: int) -> bool:
        minute = int(self._clock() // 60)
        last = self._l.get(f"rate-minute:{repo}")
        if last is None or last["minute"] != minute:  # a new minute: drop the previous minute's counter
            self._l.put(f"rate-minute:{repo}", {"minute": minute})
            if last is not None:
                self._l.drop_counter(f"rate:{repo}:{last['minute']}")
        if self._l.count(f"rate:{repo}:{minute}") <= per_minute:
            return True
        self._l.count(f"rate:{repo}:{minute}", -1)  # a refused event does not count
        return False

    def sweep(self, max_age: float = 3 * 86400) -> int:
        """Forget deliveries older than `max_age` seconds (forges redeliver within hours). Returns count."""
        old = [
            key
            for key, seen in self._l.raw_items("delivery:")
            if seen.isdigit() and self._clock() - int(seen) > max_age
        ]
        for key in old:
            self._l.delete(key)
        return len(old)

    def paused(self, pr_key: str) -> bool:
        return self._l.get(f"paused:{pr_key}") is not None

    def set_paused(self, pr_key: str, paused: bool) -> None:
        if paused:
            self._l.put(f"paused:{pr_key}", {"since": self._clock()})
        else:
            self._l.delete(f"paused:{pr_key}")

    def last_reviewed(self, pr_key: str) -> dict[str, Any] | None:
        """{"head": sha, "added": {path: [line, ...]}} of the last review, for `/review -i`."""
        return self._l.get(f"reviewed:{pr_key}")

    def set_reviewed(self, pr_key: str, head: str, added: dict[str, list[str]], max_bytes: int) -> None:
        record: dict[str, Any] = {"head": head, "added": added}
        if sum(len(x) for lines in added.values() for x in lines) > max_bytes:
            record["added"] = None  # too big to remember: the next `-i` reviews everything
        self._l.put(f"reviewed:{pr_key}", record)

    def last_findings(self, pr_key: str) -> dict[str, Any] | None:
        """{"head": sha, "findings": [{path, line, severity, category, message}, ...]} of the last
        review, for `/ask` (masked text, as published)."""
        return self._l.get(f"findings:{pr_key}")

    def set_findings(self, pr_key: str, head: str, findings: Iterable[Any], most: int = 40) -> None:
        rows = [
            {
                "path": f.path,
                "line": f.line,
                "severity": f.severity,
                "category": f.category,
                "message": " ".join(f.message.split())[:300],
            }
            for f in list(findings)[:most]
        ]
        self._l.put(f"findings:{pr_key}", {"head": head, "findings": rows})
