"""One zygote sandbox per test file, for the tests that leave it as they found it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reward_service.sandbox.zygote_client import ZygoteSandbox


@pytest.fixture(scope="module")
def sandbox() -> Iterator[ZygoteSandbox]:
    with ZygoteSandbox() as running:
        yield running
