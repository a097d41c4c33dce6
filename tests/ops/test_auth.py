"""With an API token set, scoring needs it; health probes stay open."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from reward_service.testing import LiveServer, live_server

TOKEN = "s3cret-token"
BODY = {"response": "\\boxed{2}", "label": 2}


@pytest.fixture(scope="module")
def guarded() -> Iterator[LiveServer]:
    """A server that demands the token for scoring."""
    with live_server(workers=1, env={"REWARD_API_TOKEN": TOKEN}) as running:
        yield running


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}]
)
def test_scoring_without_the_token_is_401(guarded: LiveServer, headers: dict[str, str]) -> None:
    """No token, a wrong one or the wrong scheme: 401 that reveals nothing."""
    response = httpx.post(f"{guarded.url}/score", json=BODY, headers=headers)
    assert response.status_code == 401
    assert response.json() == {"error": "unauthorized"}


def test_bearer_token_scores(guarded: LiveServer) -> None:
    """`Authorization: Bearer <token>` is accepted."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    response = httpx.post(f"{guarded.url}/score", json=BODY, headers=headers)
    assert (response.status_code, response.json()) == (200, 1.0)


def test_token_path_form_scores(guarded: LiveServer) -> None:
    """`/t/<token>/score...` works as a SLIME --rm-url, which cannot send headers."""
    ok = httpx.post(f"{guarded.url}/t/{TOKEN}/score/math_verify", json=BODY)
    assert (ok.status_code, ok.json()) == (200, 1.0)
    assert httpx.post(f"{guarded.url}/t/wrong/score", json=BODY).status_code == 401


@pytest.mark.parametrize("path", ["/livez", "/readyz", "/health", "/metrics"])
def test_probes_and_metrics_stay_open(guarded: LiveServer, path: str) -> None:
    """Health probes (and metrics, by default) need no token."""
    assert httpx.get(f"{guarded.url}{path}").status_code == 200
