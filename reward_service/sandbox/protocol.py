"""Worker <-> zygote messages: length-prefixed JSON objects, never pickle.

Stdlib only (the zygote imports it). A frame is a 4-byte big-endian length
and that many bytes of UTF-8 JSON holding one object; bytes travel as
base64 strings. A frame over its reader's limit (at most `MAX_FRAME`) is a
broken peer.
"""

from __future__ import annotations

import base64
import json
import os
import struct
from typing import Any

MAX_FRAME = 256 * 1024 * 1024
_HEADER = struct.Struct(">I")

Message = dict[str, Any]


class ProtocolError(Exception):
    """The peer sent something that is not a frame of a JSON object."""


def encode(message: Message) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    return _HEADER.pack(len(body)) + body


def decode(body: bytes) -> Message:
    try:
        message = json.loads(body)
    except ValueError as e:
        raise ProtocolError(f"not JSON: {e}") from None
    if not isinstance(message, dict):
        raise ProtocolError("not a JSON object")
    return message


def frame_length(header: bytes, limit: int = MAX_FRAME) -> int:
    (length,) = _HEADER.unpack(header)
    if length > limit:
        raise ProtocolError(f"frame of {length} bytes")
    return int(length)


HEADER_SIZE = _HEADER.size


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_exactly(fd: int, n: int) -> bytes | None:
    """`n` bytes from a blocking fd; None at end of file before the first byte."""
    chunks = bytearray()
    while len(chunks) < n:
        chunk = os.read(fd, n - len(chunks))
        if not chunk:
            if chunks:
                raise ProtocolError("end of file inside a frame")
            return None
        chunks += chunk
    return bytes(chunks)


def read_message(fd: int) -> Message | None:
    """The next message from a blocking fd; None at end of file."""
    header = read_exactly(fd, HEADER_SIZE)
    if header is None:
        return None
    body = read_exactly(fd, frame_length(header))
    if body is None:
        raise ProtocolError("end of file inside a frame")
    return decode(body)


def to_text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def from_text(text: object) -> bytes:
    if not isinstance(text, str):
        raise ProtocolError("expected a base64 string")
    try:
        return base64.b64decode(text, validate=True)
    except ValueError as e:
        raise ProtocolError(f"bad base64: {e}") from None
