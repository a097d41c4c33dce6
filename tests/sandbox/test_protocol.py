"""Frames between worker and zygote: a JSON object and the raw payload it describes."""

from __future__ import annotations

import faulthandler
import os
import struct

import pytest

from reward_service.sandbox import protocol


def test_a_frame_survives_a_pipe_with_its_payload() -> None:
    """A message and its payload parts read back as the message and the joined payload."""
    message = {"kind": "ok", "stdout_bytes": 2, "stderr_bytes": 3}
    r, w = os.pipe()
    try:
        protocol.write_frame(w, message, b"\x00\xff", memoryview(b"err"))
        os.close(w)
        frame = protocol.read_frame(r)
        assert frame is not None
        read, payload = frame
        assert read == message and payload[:5] == b"\x00\xfferr"
        payload.close()
        assert protocol.read_frame(r) is None
    finally:
        os.close(r)


def test_a_payload_lands_in_memory_a_fork_does_not_inherit() -> None:
    """A child forked while the payload buffer exists cannot read it (MADV_DONTFORK)."""
    buffer = protocol.private_buffer(4096)
    buffer[:6] = b"secret"
    pid = os.fork()
    if pid == 0:
        faulthandler.disable()  # the crash is the point: no traceback in the test's output
        try:
            buffer[:6]  # the mapping is gone in the child: SIGSEGV
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    buffer.close()
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == 11


@pytest.mark.parametrize("body", [b"[1, 2]", b"not json", b'"text"'])
def test_a_body_that_is_not_a_json_object_is_refused(body: bytes) -> None:
    """Only JSON objects are messages."""
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(body)


@pytest.mark.parametrize(
    ("body", "payload"), [(protocol.MAX_JSON + 1, 0), (10, protocol.MAX_PAYLOAD + 1)]
)
def test_an_oversized_frame_is_refused_from_its_header(body: int, payload: int) -> None:
    """A header announcing more than the reader's limits is a broken peer."""
    with pytest.raises(protocol.ProtocolError):
        protocol.sizes(protocol.HEADER.pack(body, payload))


def test_a_reader_s_own_payload_limit_applies() -> None:
    """A reader may refuse payloads larger than it expects (the worker: its output cap)."""
    header = protocol.HEADER.pack(10, 2000)
    assert protocol.sizes(header, max_payload=2000) == (10, 2000)
    with pytest.raises(protocol.ProtocolError):
        protocol.sizes(header, max_payload=1999)


def test_a_frame_cut_short_is_refused() -> None:
    """End of file inside a frame is an error, not an empty message."""
    r, w = os.pipe()
    try:
        frame = b"".join(bytes(part) for part in protocol.encode({"a": 1}, b"payload"))
        os.write(w, frame[:-2])
        os.close(w)
        with pytest.raises(protocol.ProtocolError):
            protocol.read_frame(r)
    finally:
        os.close(r)


def test_the_header_is_two_big_endian_lengths() -> None:
    """The wire format: JSON length, payload length, JSON, payload."""
    frame = b"".join(bytes(part) for part in protocol.encode({"a": 1}, b"xy"))
    assert frame == struct.pack(">II", 7, 2) + b'{"a":1}' + b"xy"
