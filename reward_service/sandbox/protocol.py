"""Worker <-> zygote frames: a JSON object and the raw bytes it describes, never pickle.

Stdlib only (the zygote imports it). A frame is two 4-byte big-endian
lengths, a UTF-8 JSON object of the first length and a payload of the
second; the object says how the payload splits (`source_bytes`,
`stdin_bytes`, `stdout_bytes`, ...). Programs, inputs and outputs travel
only in payloads, so the zygote can keep them out of its own heap, in
buffers its forked runs do not inherit (`private_buffer`): no run can find
an earlier run's data in the memory it was forked with. A frame over its
reader's limits is a broken peer.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from typing import Any

MAX_JSON = 64 * 1024
MAX_PAYLOAD = 256 * 1024 * 1024
HEADER = struct.Struct(">II")

Message = dict[str, Any]


class ProtocolError(Exception):
    """The peer sent something that is not a frame of a JSON object."""


def encode(message: Message, *payload: bytes | memoryview) -> list[bytes | memoryview]:
    """The buffers of one frame, to be written in order."""
    body = json.dumps(message, separators=(",", ":")).encode()
    return [HEADER.pack(len(body), sum(len(part) for part in payload)), body, *payload]


def decode(body: bytes) -> Message:
    try:
        message = json.loads(body)
    except ValueError as e:
        raise ProtocolError(f"not JSON: {e}") from None
    if not isinstance(message, dict):
        raise ProtocolError("not a JSON object")
    return message


def sizes(
    header: bytes, max_json: int = MAX_JSON, max_payload: int = MAX_PAYLOAD
) -> tuple[int, int]:
    """The JSON and payload lengths a header announces, checked against the reader's limits."""
    body, payload = HEADER.unpack(header)
    if body > max_json or payload > max_payload:
        raise ProtocolError(f"frame of {body} + {payload} bytes")
    return int(body), int(payload)


def write_frame(fd: int, message: Message, *payload: bytes | memoryview) -> None:
    """All of one frame to a blocking fd, without joining its parts into one copy."""
    parts = [memoryview(part).cast("B") for part in encode(message, *payload) if len(part)]
    while parts:
        written = os.writev(fd, parts)
        while parts and written >= len(parts[0]):
            written -= len(parts.pop(0))
        if parts:
            parts[0] = parts[0][written:]


def private_buffer(size: int) -> mmap.mmap:
    """Anonymous memory that a fork does not inherit (MADV_DONTFORK)."""
    buffer = mmap.mmap(-1, max(size, 1))
    buffer.madvise(mmap.MADV_DONTFORK)
    return buffer


def read_into(fd: int, view: memoryview) -> bool:
    """Fill `view` from a blocking fd; False at end of file before the first byte."""
    got = 0
    while got < len(view):
        n = os.readv(fd, [view[got:]])
        if n == 0:
            if got:
                raise ProtocolError("end of file inside a frame")
            return False
        got += n
    return True


def read_frame(fd: int) -> tuple[Message, mmap.mmap] | None:
    """The next frame from a blocking fd, its payload in a `private_buffer`; None at end of file."""
    header = bytearray(HEADER.size)
    if not read_into(fd, memoryview(header)):
        return None
    body_size, payload_size = sizes(bytes(header))
    body = bytearray(body_size)
    payload = private_buffer(payload_size)
    with memoryview(body) as body_view, memoryview(payload) as payload_view:
        if not (read_into(fd, body_view) and read_into(fd, payload_view[:payload_size])):
            raise ProtocolError("end of file inside a frame")
    return decode(bytes(body)), payload
