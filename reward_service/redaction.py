"""Redaction: URLs made safe to print in logs, errors and suggested commands.

A SLIME URL may carry the API token in its path (`/t/<token>/score`), and any
URL may carry a password; both are masked wherever a URL is shown.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

_TOKEN_SEGMENT = re.compile(r"^/t/[^/]+")


def redact(url: str) -> str:
    """The URL safe to print: an API token in the path or a password is masked."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(f":{parts.password}@", ":***@", 1)
    path = _TOKEN_SEGMENT.sub("/t/***", parts.path, count=1)
    return urlunsplit(parts._replace(netloc=netloc, path=path))
