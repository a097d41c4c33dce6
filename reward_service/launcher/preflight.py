"""Preflight: refuse to start a GPU job against a reward service that is down or wrong.

Four steps, each failing with a `PreflightError` whose message says what is
wrong and gives a `curl` line to check it by hand:

1. the URL's host resolves (a wrong Service name or namespace fails here, at
   once: a name that does not resolve will not start resolving during the wait);
2. `/readyz` answers 200 within a bounded wait, with progress lines meanwhile
   (a Service that exists but has no ready pod yet is worth waiting for);
3. the service serves the URL's scorer and its start-up check passed (an
   unconfigured judge, missing checker data or a sandbox that did not start is
   named here, with the setting that fixes it, from `/scorers`);
4. a known-correct and a known-wrong answer, posted exactly as SLIME posts them
   to the exact URL SLIME will use, are graded 1 and 0, and, asked for details,
   with status `ok` and `wrong`: a reward of 0 that is really a failure
   (`judge_failed`, `error`) is refused.
"""

from __future__ import annotations

import json
import shlex
import socket
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from reward_service.errors import RewardServiceError
from reward_service.launcher.config import CLIENT_NAMESPACE_LABEL, SERVICE, SERVICE_NAMESPACE
from reward_service.launcher.urls import (
    CLUSTER_DOMAIN,
    readyz_url,
    scorers_url,
    url_scorer,
    with_detail,
)
from reward_service.redaction import redact

Say = Callable[[str], None]

_PROGRESS_S = 15.0
"""Repeat an unchanged waiting line at most this often."""

_NO_SUCH_NAME = frozenset({socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)})


class PreflightError(RewardServiceError):
    """The reward service is unreachable, not ready, or grades wrongly."""


@dataclass(frozen=True)
class Probe:
    """One sample with the reward, and the status, a working math scorer must give it."""

    name: str
    body: Mapping[str, str]
    expected: float
    status: str


PROBES = (
    Probe(
        "known-correct",
        {"prompt": "What is 1 + 1?", "response": "1 + 1 = 2, so \\boxed{2}", "label": "2"},
        1.0,
        "ok",
    ),
    Probe(
        "known-wrong",
        {"prompt": "What is 1 + 1?", "response": "1 + 1 = 3, so \\boxed{3}", "label": "2"},
        0.0,
        "wrong",
    ),
)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def curl_line(url: str, body: Mapping[str, Any] | None = None) -> str:
    """A shell line that repeats the request by hand (URL redacted)."""
    if body is None:
        return shlex.join(["curl", "-sS", "-i", redact(url)])
    data = json.dumps(dict(body))
    header = "Content-Type: application/json"
    return shlex.join(["curl", "-sS", "-i", "-X", "POST", "-H", header, "-d", data, redact(url)])


def _in_cluster(url: str) -> tuple[str, str] | None:
    """(Service, namespace) if the URL's host is a Service's cluster DNS name, else None."""
    host = urlsplit(url).hostname or ""
    for suffix in ("." + CLUSTER_DOMAIN, ".svc"):
        labels = host.removesuffix(suffix).split(".") if host.endswith(suffix) else []
        if len(labels) == 2:
            return labels[0], labels[1]
    return None


def check_resolves(url: str) -> None:
    """Fail at once if the URL's host has no address (wrong Service name or namespace)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PreflightError(f"not an http(s) URL: {redact(url)!r}")
    try:
        socket.getaddrinfo(parts.hostname, parts.port or 80, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        found = _in_cluster(url)
        # Only "no such name" says the Service is missing; EAI_AGAIN is the DNS server.
        missing = isinstance(exc, socket.gaierror) and exc.errno in _NO_SUCH_NAME
        where = f": no Service {found[0]!r} in namespace {found[1]!r}" if found and missing else ""
        service = found[0] if found else SERVICE
        raise PreflightError(
            f"cannot resolve {parts.hostname!r} ({exc}){where}.\n"
            f"  The manifests in kubernetes/ deploy Service {SERVICE!r} into namespace "
            f"{SERVICE_NAMESPACE!r}, the launcher's default.\n"
            f"  Find yours: kubectl get service --all-namespaces | grep {service}\n"
            "  then set SLIME_REWARD_NAMESPACE (--namespace) and SLIME_REWARD_SERVICE "
            "(--service), or the whole URL: SLIME_REWARD_URL (--url)."
        ) from None


def wait_ready(
    client: httpx.Client, url: str, wait_s: float, interval_s: float, say: Say = _stderr
) -> None:
    """Poll `/readyz` until it answers 200; `PreflightError` once `wait_s` has passed."""
    probe_url = readyz_url(url)
    start = time.monotonic()
    last_said: tuple[str, float] | None = None
    while True:
        try:
            answer = client.get(probe_url, timeout=min(10.0, max(wait_s, 1.0)))
        except httpx.TransportError as exc:
            state = f"unreachable ({type(exc).__name__}: {exc})"
        else:
            if answer.status_code == 200:
                say(f"preflight: {redact(probe_url)} is ready")
                return
            state = f"HTTP {answer.status_code} (warming up, draining or unhealthy)"
        elapsed = time.monotonic() - start
        if elapsed >= wait_s:
            service, namespace = _in_cluster(url) or ("<service>", "<namespace>")
            raise PreflightError(
                f"reward service not ready after {wait_s:g}s: {redact(probe_url)} is {state}.\n"
                f"  check by hand: {curl_line(probe_url)}\n"
                f"  in Kubernetes: kubectl -n {namespace} get pods,endpoints | grep {service}\n"
                "  a connection that times out is often the service's NetworkPolicy: it admits "
                f"namespaces labelled {CLIENT_NAMESPACE_LABEL}=true\n"
                f"  (kubectl label namespace <this job's namespace> {CLIENT_NAMESPACE_LABEL}=true)"
            )
        if last_said is None or last_said[0] != state or elapsed >= last_said[1] + _PROGRESS_S:
            say(f"preflight: waiting for {redact(probe_url)}: {state}; {elapsed:.0f}s/{wait_s:g}s")
            last_said = (state, elapsed)
        time.sleep(min(interval_s, max(wait_s - elapsed, 0.0)))


def _reward_of(value: Any, reward_key: str | None) -> float:
    if reward_key is not None:
        if not isinstance(value, dict) or reward_key not in value:
            raise ValueError(f"answered {value!r}, which has no key {reward_key!r} (--reward-key)")
        value = value[reward_key]
    elif isinstance(value, dict):
        raise ValueError(
            f"answered an object {value!r}; SLIME needs a bare number, "
            "or --reward-key reward with a ?detail=1 URL"
        )
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"answered {value!r}, not a number")
    return float(value)


def _said(answer: httpx.Response) -> str:
    """What an answer that is not a reward says: its JSON `error`/`detail`, whole, else the
    start of its body."""
    try:
        body = answer.json()
    except ValueError:
        return repr(answer.text[:300])
    if isinstance(body, dict):
        for key in ("error", "detail"):
            if isinstance(body.get(key), str):
                return str(body[key])
    return repr(answer.text[:300])


def check_scorer(client: httpx.Client, url: str) -> None:
    """Fail when the service does not serve the URL's scorer or its start-up check failed,
    naming the check's own reason (the setting to set). A service without `/scorers` (an
    older one, a stand-in) is left to the probes."""
    try:
        listing = client.get(scorers_url(url)).json()
    except (httpx.TransportError, ValueError):
        return
    if not isinstance(listing, dict) or not isinstance(listing.get("scorers"), list):
        return
    name = url_scorer(url) or listing.get("default")
    if name not in listing["scorers"]:
        known = ", ".join(map(str, listing["scorers"]))
        raise PreflightError(
            f"{redact(url)} names scorer {name!r}, which this service does not serve; "
            f"it serves: {known}"
        )
    checks = listing.get("checks")
    check = checks.get(str(name).removeprefix("boxed_")) if isinstance(checks, dict) else None
    if isinstance(check, dict) and check.get("ok") is False:
        raise PreflightError(
            f"scorer {name!r} failed its start-up check on the service: {check.get('summary')}\n"
            "  its answers would get the fallback reward and training would learn nothing; "
            "fix the service's settings and restart it.\n"
            f"  check by hand: {curl_line(scorers_url(url))}"
        )


def _detail(client: httpx.Client, url: str, probe: Probe) -> Mapping[str, Any] | None:
    """The probe's detail object (`?detail=1`), or None when the service gives none."""
    try:
        answer = client.post(with_detail(url), json=dict(probe.body))
        detail = answer.json()
    except (httpx.TransportError, ValueError):
        return None
    return detail if isinstance(detail, dict) and "status" in detail else None


def check_probe(client: httpx.Client, url: str, probe: Probe, reward_key: str | None) -> None:
    """Post one probe as SLIME would and insist on its expected reward, then on its status."""
    how = f"  check by hand: {curl_line(url, probe.body)}"
    try:
        answer = client.post(url, json=dict(probe.body))
    except httpx.TransportError as exc:
        raise PreflightError(
            f"posting the {probe.name} sample to {redact(url)} failed: {exc}\n{how}"
        ) from None
    if answer.status_code == 401:
        raise PreflightError(
            f"{redact(url)} answered the {probe.name} sample with HTTP 401: the service "
            "requires its API token. Set SLIME_REWARD_TOKEN (the URL becomes "
            "/t/<token>/score), from the Secret slime-reward-token in the service's namespace.\n"
            f"{how}"
        )
    if answer.status_code != 200:
        raise PreflightError(
            f"{redact(url)} answered the {probe.name} sample with HTTP {answer.status_code}: "
            f"{_said(answer)}; SLIME retries this and then stops training.\n{how}"
        )
    if "json" not in answer.headers.get("content-type", ""):
        raise PreflightError(
            f"{redact(url)} answered with content type {answer.headers.get('content-type')!r}, "
            f"which SLIME rejects; is this URL the reward service?\n{how}"
        )
    try:
        value = answer.json()
        reward = _reward_of(value, reward_key)
    except ValueError as exc:
        raise PreflightError(f"{redact(url)} {exc} for the {probe.name} sample.\n{how}") from None
    # a ?detail=1 URL answered the detail object already: no second post
    detail = value if isinstance(value, dict) and "status" in value else _detail(client, url, probe)
    status = None if detail is None else detail.get("status")
    why = f" (status {status}: {detail.get('reason', 'no reason given')})" if detail else ""
    if reward != probe.expected:
        raise PreflightError(
            f"{redact(url)} graded the {probe.name} sample {reward:g}, expected "
            f"{probe.expected:g}{why}: the scorer behind this URL does not grade math answers "
            "(wrong scorer in the URL?) or is broken; training against it would learn nothing.\n"
            f"{how}"
        )
    if status is not None and status != probe.status:
        raise PreflightError(
            f"{redact(url)} gave the {probe.name} sample {reward:g} with status {status}, "
            f"not {probe.status}{why}: that reward is a failure's fallback, not a grade; "
            f"training against it would learn nothing.\n  check by hand: "
            f"{curl_line(with_detail(url), probe.body)}"
        )


def run_preflight(
    url: str,
    *,
    reward_key: str | None = None,
    wait_s: float = 600.0,
    interval_s: float = 2.0,
    check_grading: bool = True,
    say: Say = _stderr,
) -> None:
    """Resolve, wait for readiness, then grade the probes; raise `PreflightError` on failure."""
    say(f"preflight: SLIME will post to {redact(url)}")
    check_resolves(url)
    with httpx.Client(timeout=30.0) as client:
        wait_ready(client, url, wait_s, interval_s, say)
        check_scorer(client, url)
        if check_grading:
            for probe in PROBES:
                check_probe(client, url, probe, reward_key)
            say("preflight: known-correct sample graded 1, known-wrong graded 0")
