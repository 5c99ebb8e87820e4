"""The server's logs: one JSON object per line (`server.log_format: json`, the default) or plain text,
each carrying the job, delivery and PR it is about, from the webhook that queued the job to its end."""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import time
from collections.abc import Iterator

_CONTEXT: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "prereview_log", default=None
)


@contextlib.contextmanager
def about(**fields: str) -> Iterator[None]:
    """Log records made inside carry these fields (job, delivery, pr, kind)."""
    token = _CONTEXT.set({**(_CONTEXT.get() or {}), **{k: v for k, v in fields.items() if v}})
    try:
        yield
    finally:
        _CONTEXT.reset(token)


class _Context(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.ctx = _CONTEXT.get() or {}
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            **getattr(record, "ctx", {}),
        }
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        ctx = getattr(record, "ctx", {})
        return line + (" [" + " ".join(f"{k}={v}" for k, v in ctx.items()) + "]" if ctx else "")


def setup(fmt: str) -> None:
    """Configure the root logger of `serve` or `worker` (INFO, stderr)."""
    handler = logging.StreamHandler()
    handler.addFilter(_Context())
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
