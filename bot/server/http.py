"""uvicorn settings for a server on the open internet: header deadline, keep-alive, size and connection caps.

uvicorn times out idle keep-alive connections but not a client that never finishes its request head: a
thousand half-open connections ("slowloris") would be kept for ever. `deadline_protocol` closes a
connection whose request line and headers have not all arrived `header_timeout` seconds after it opened
(or after its previous response); the body then has `server.request_timeout` (the app's 408).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..config import ServerConfig


def deadline_protocol(header_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a deadline for each request head."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderDeadline(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _waiting_for: Any = None  # the request cycle before the head we wait for (None: the first)

        def _arm(self) -> None:
            self._disarm()
            self._waiting_for = self.cycle
            self._deadline = self.loop.call_later(header_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                self.logger.info("closed a connection whose request head took over %ss", header_timeout)
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def handle_events(self) -> None:
            super().handle_events()
            if self._deadline is not None and self.cycle is not self._waiting_for:
                self._disarm()  # a new request's head is complete

        def on_response_complete(self) -> None:
            super().on_response_complete()  # may start a pipelined request already received
            if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
                self._arm()  # the next request on this keep-alive connection gets the same deadline

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderDeadline


def uvicorn_options(cfg: ServerConfig) -> dict[str, Any]:
    """Keyword arguments for `uvicorn.run` / `uvicorn.Config`."""
    return {
        "http": deadline_protocol(cfg.header_timeout),
        "timeout_keep_alive": cfg.keep_alive_seconds,
        "limit_concurrency": cfg.max_connections,
        "h11_max_incomplete_event_size": cfg.max_header_bytes,
    }
