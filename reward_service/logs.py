"""JSON log lines: one object per event, with the request id when there is one."""

from __future__ import annotations

import contextvars
import logging
import sys
import time
from typing import Any

import orjson

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
"""The id of the request being served, set by the app for each request."""

_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",
}


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON line: time, level, logger, message, extras."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = request_id.get()
        if rid is not None:
            line["request_id"] = rid
        line.update((k, v) for k, v in vars(record).items() if k not in _RESERVED)
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def configure(level: str) -> None:
    """Send every log record, ours and uvicorn's, to stderr as JSON lines."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    for name in QUIET_CLIENTS:
        logging.getLogger(name).setLevel(max(root.level, logging.WARNING))


QUIET_CLIENTS = ("httpx", "httpcore")
"""HTTP clients that log every request at INFO: a judge scorer's thousands of calls would
flood the log (and cost the event loop a line each); their warnings still show."""
