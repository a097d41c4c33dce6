"""Reading a request's body: within its size cap, the byte budget and one deadline.

The endpoints read their bodies themselves rather than through FastAPI, so
that a body is refused as soon as it is too large for its cap or for what
the requests in progress already hold (`reward_service.server.admission`),
before it is all in memory. JSON parsing is `reward_service.server.json_body`'s.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import ClientDisconnect, Request

from reward_service.errors import BadRequest, ClientGone, PayloadTooLarge, RequestTimeout
from reward_service.server.admission import Claim
from reward_service.server.json_body import read_json
from reward_service.settings import Settings


async def read_body(request: Request, claim: Claim, max_bytes: int) -> bytes:
    """The request body, its size checked against the cap and the budget before it is kept."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit():
        if int(declared) > max_bytes:
            raise PayloadTooLarge(f"body of {declared} bytes is over the {max_bytes}-byte cap")
        claim.hold(int(declared))
    chunks = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise PayloadTooLarge(f"body is over the {max_bytes}-byte cap")
            claim.hold(size)
            chunks.append(chunk)
    except ClientDisconnect:
        raise ClientGone(f"client hung up after {size} bytes of its body") from None
    return b"".join(chunks)


async def read_object(request: Request, claim: Claim, settings: Settings) -> dict[str, Any]:
    """The request body as a JSON object, read within `body_timeout_s` in all.

    The deadline covers the whole body, not each read, so a client dripping
    a byte at a time cannot hold its admission slot longer than a stalled one.
    """
    try:
        raw = await asyncio.wait_for(
            read_body(request, claim, settings.max_body_bytes), settings.body_timeout_s
        )
    except asyncio.TimeoutError:
        raise RequestTimeout(
            f"request body not received within {settings.body_timeout_s} s"
        ) from None
    try:
        body = read_json(raw)
    except ValueError as exc:
        raise BadRequest(f"body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequest(f"body must be a JSON object, not {type(body).__name__}")
    return body
