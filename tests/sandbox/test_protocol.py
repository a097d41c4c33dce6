"""Length-prefixed JSON frames between worker and zygote."""

from __future__ import annotations

import os
import struct

import pytest

from reward_service.sandbox import protocol


def test_a_message_survives_a_pipe() -> None:
    """A frame written to a pipe reads back as the same object."""
    message = {"kind": "ok", "stdout": protocol.to_text(b"\x00\xff"), "exit_code": None}
    r, w = os.pipe()
    try:
        protocol.write_all(w, protocol.encode(message))
        os.close(w)
        assert protocol.read_message(r) == message
        assert protocol.read_message(r) is None
    finally:
        os.close(r)


def test_bytes_travel_as_base64() -> None:
    """to_text and from_text are inverse on arbitrary bytes."""
    data = bytes(range(256))
    assert protocol.from_text(protocol.to_text(data)) == data


@pytest.mark.parametrize("body", [b"[1, 2]", b"not json", b'"text"'])
def test_a_body_that_is_not_a_json_object_is_refused(body: bytes) -> None:
    """Only JSON objects are messages."""
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(body)


def test_an_oversized_frame_is_refused_from_its_header() -> None:
    """A header announcing more than MAX_FRAME is a broken peer."""
    with pytest.raises(protocol.ProtocolError):
        protocol.frame_length(struct.pack(">I", protocol.MAX_FRAME + 1))


@pytest.mark.parametrize("text", ["@@@", 5, None])
def test_bad_base64_is_refused(text: object) -> None:
    """Output fields that are not base64 strings are protocol errors."""
    with pytest.raises(protocol.ProtocolError):
        protocol.from_text(text)


def test_a_frame_cut_short_is_refused() -> None:
    """End of file inside a frame is an error, not an empty message."""
    r, w = os.pipe()
    try:
        os.write(w, protocol.encode({"a": 1})[:-2])
        os.close(w)
        with pytest.raises(protocol.ProtocolError):
            protocol.read_message(r)
    finally:
        os.close(r)
