"""With an API token set, scoring needs it; health probes stay open; auth never fails open."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from reward_service.testing import LiveServer, free_port, live_server

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


@pytest.mark.parametrize("path", ["/livez", "/readyz", "/health", "/metrics", "/v1/ping"])
def test_probes_and_metrics_stay_open(guarded: LiveServer, path: str) -> None:
    """Health probes (and metrics, by default) need no token."""
    assert httpx.get(f"{guarded.url}{path}").status_code == 200


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"REWARD_REQUIRE_API_TOKEN": "true"}, "REWARD_REQUIRE_API_TOKEN is true"),
        ({"REWARD_API_TOKEN": ""}, "REWARD_API_TOKEN is set but blank"),
        ({"REWARD_REQUIRE_API_TOKEN": "true", "REWARD_API_TOKEN": " "}, "set but blank"),
    ],
)
def test_configured_auth_without_a_token_stops_serve(env: dict[str, str], message: str) -> None:
    """`serve` with auth required but no usable token exits 1 with the reason, serving nothing."""
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("REWARD_")}
    command = [sys.executable, "-m", "reward_service", "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--workers", "1"]
    proc = subprocess.run(
        command, env={**clean, **env}, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "invalid settings" in proc.stderr and message in proc.stderr
    assert "starting" not in proc.stderr
