"""A fault-injecting HTTP proxy on loopback, in front of an emulated forge (or any HTTP server).

Requests pass through unchanged unless a rule matches (method and a regex on the path):
- `lose`: the request reaches the upstream, which acts on it, then the client's connection is closed
  without a response (a response lost on the way back: a reset, a load balancer timing out);
- `status`: the client gets that status and the upstream never sees the request;
- `delay`: the request waits that many seconds before it is passed on.
"""

from __future__ import annotations

import http.client
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "upgrade", "host"}


@dataclass
class Rule:
    method: str
    path: re.Pattern[str]
    times: int
    status: int = 0  # 0: lose the response
    delay: float = 0.0  # > 0: pass it on late (status and losing do not apply)


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.rules: list[Rule] = []
        self.lost: list[str] = []  # "METHOD path" of every response dropped
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def lose(self, method: str, path_regex: str, times: int = 1) -> None:
        self.rules.append(Rule(method.upper(), re.compile(path_regex), times))

    def answer(self, method: str, path_regex: str, status: int, times: int = 1) -> None:
        self.rules.append(Rule(method.upper(), re.compile(path_regex), times, status))

    def delay(self, method: str, path_regex: str, seconds: float, times: int = 1) -> None:
        self.rules.append(Rule(method.upper(), re.compile(path_regex), times, delay=seconds))

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.prefix}"

    def _rule(self, method: str, path: str) -> Rule | None:
        with self._lock:
            for r in self.rules:
                if r.times > 0 and r.method == method and r.path.search(path):
                    r.times -= 1
                    return r
        return None

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else None
        rule = self._rule(h.command, urlsplit(h.path).path)
        if rule is not None and rule.delay:
            time.sleep(rule.delay)
            rule = None
        if rule is not None and rule.status:
            data = b'{"message": "injected by the proxy"}'
            h.send_response(rule.status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        headers = {k: v for k, v in h.headers.items() if k.lower() not in HOP}
        conn.request(h.command, h.path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        if rule is not None:  # the upstream did it; the client never hears
            self.lost.append(f"{h.command} {urlsplit(h.path).path}")
            h.close_connection = True
            h.connection.shutdown(2)
            return
        # Links to the upstream (pagination, `url` fields) point at the proxy instead.
        here = f"http://127.0.0.1:{h.server.server_address[1]}"
        there = f"http://{self.host}:{self.port}"
        data = data.replace(there.encode(), here.encode())
        h.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in HOP and k.lower() != "content-length":
                h.send_header(k, v.replace(there, here))
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def __enter__(self) -> FaultProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
                pass

            def _any(self) -> None:
                proxy._handle(self)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any  # noqa: N815

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
