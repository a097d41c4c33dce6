"""A private server for fuzzing: whatever a fuzzer sends must not touch other tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reward_service.testing import LiveServer, live_server
from tests.conftest import TEST_ENV


@pytest.fixture(scope="package")
def fuzz_server() -> Iterator[LiveServer]:
    """One two-worker server for every fuzz test, with the fake scorer loaded and NeMo Gym's
    root routes serving its math environment (else the fuzzer only meets their 404s)."""
    env = {**TEST_ENV, "REWARD_NEMO_GYM_ENVIRONMENT": "math"}
    with live_server(workers=2, env=env) as running:
        yield running
