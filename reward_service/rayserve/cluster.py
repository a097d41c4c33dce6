"""Deploy, inspect and delete the application through the Ray dashboard's REST API.

The same API `serve deploy` and `ray list nodes` use (`/api/serve/applications/`,
`/api/v0/nodes`), spoken with httpx: nothing here imports Ray, so the launcher
can check the service from a training job. Serve's config holds every
application of the cluster, so deploying and deleting ours keeps the others
as they are deployed.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from reward_service.rayserve.placement import Node, check_placement
from reward_service.rayserve.spec import APP_NAME, DEPLOYMENT_NAME, RayServeError, ServeSpec

Say = Callable[[str], None]

_ANY_HOST = frozenset({"0.0.0.0", "::", ""})


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Replica:
    replica_id: str
    state: str
    node_ip: str
    node_id: str


@dataclass(frozen=True)
class AppStatus:
    """Our application as Serve reports it."""

    status: str
    message: str
    deployment_status: str
    deployment_message: str
    replicas: tuple[Replica, ...]
    endpoint: str
    metrics: tuple[str, ...] = ()
    """Each running replica's own /metrics, at the ports replicas usually take (from
    `metrics_port` up, per node; docs/ray.md#metrics says when one takes the next)."""
    target_replicas: int | None = None

    @property
    def serving(self) -> bool:
        """Taking traffic: the application runs and a replica of it does (scaling or not)."""
        return self.status == "RUNNING" and any(r.state == "RUNNING" for r in self.replicas)

    @property
    def settled(self) -> bool:
        """Healthy with exactly the replicas Serve aims for, all running: a deploy is done."""
        states = [replica.state for replica in self.replicas]
        return (
            self.serving
            and self.deployment_status == "HEALTHY"
            and all(state == "RUNNING" for state in states)
            and (self.target_replicas is None or len(states) == self.target_replicas)
        )

    def describe(self) -> str:
        lines = [
            f"application {APP_NAME}: {self.status}"
            + (f" ({self.message})" if self.message else ""),
            f"  deployment {DEPLOYMENT_NAME}: {self.deployment_status}"
            + (f" ({self.deployment_message})" if self.deployment_message else ""),
            f"  endpoint: {self.endpoint}/score",
        ]
        lines += [f"  replica {r.replica_id}: {r.state} on {r.node_ip}" for r in self.replicas]
        lines += [f"  replica metrics: {url}" for url in self.metrics]
        return "\n".join(lines)


class Dashboard:
    """The Ray dashboard of one cluster (`http://<head>:8265`)."""

    def __init__(self, address: str, timeout_s: float = 30.0) -> None:
        if "://" not in address:
            address = f"http://{address}"
        self.address = address.rstrip("/")
        self._client = httpx.Client(base_url=self.address, timeout=timeout_s)

    def __enter__(self) -> Dashboard:
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            answer = self._client.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise RayServeError(
                f"cannot reach the Ray dashboard at {self.address} ({exc}); "
                "pass its address (http://<head>:8265) with --address or RAY_ADDRESS"
            ) from None
        if answer.status_code >= 400:
            raise RayServeError(
                f"the Ray dashboard answered {method} {path} with HTTP {answer.status_code}: "
                f"{answer.text[:2000]}"
            )
        return answer

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """Any dashboard endpoint; `RayServeError` when it cannot be reached or refuses."""
        return self._request(method, path, **kwargs)

    def nodes(self) -> list[Node]:
        answer = self._request("GET", "/api/v0/nodes", params={"limit": 10_000}).json()
        return [Node.from_state(state) for state in answer["data"]["result"]["result"]]

    def details(self) -> dict[str, Any]:
        details: dict[str, Any] = self._request("GET", "/api/serve/applications/").json()
        return details

    def _others(self, details: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
        apps = details.get("applications") or {}
        return tuple(
            app["deployed_app_config"]
            for name, app in apps.items()
            if name != APP_NAME and app.get("deployed_app_config")
        )

    def deploy(
        self,
        spec: ServeSpec,
        secrets: Mapping[str, str],
        *,
        wait_s: float = 600.0,
        say: Say = _stderr,
    ) -> AppStatus:
        """Check placement, deploy (or update) our application, wait until it runs."""
        eligible = check_placement(self.nodes(), spec)
        where = ", ".join(f"{n.ip} ({n.node_id[:8]})" for n in eligible)
        say(f"ray: {len(eligible)} CPU node(s) may hold replicas: {where}")
        config = spec.config(secrets, self._others(self.details()))
        self._request("PUT", "/api/serve/applications/", json=config)
        running = _http_options(self.details())
        if (running["host"], running["port"]) != (spec.host, spec.port):
            say(
                f"ray: warning: Serve was already listening on {running['host']}:"
                f"{running['port']} and keeps it (--http-host/--http-port apply only when "
                "no Serve application runs)"
            )
        cpus = spec.cpus_per_replica
        say(f"ray: deployed {APP_NAME}: {spec.replicas} replica(s) of {cpus:g} CPU")
        return self.wait_running(wait_s, say)

    def status(self) -> AppStatus | None:
        """Our application's status, or None when it is not deployed."""
        return app_status(self.details(), self.nodes())

    def wait_running(self, wait_s: float, say: Say = _stderr, interval_s: float = 1.0) -> AppStatus:
        """Poll until our application has settled; `RayServeError` if it fails or time runs out."""
        deadline = time.monotonic() + wait_s
        last = ""
        while True:
            status = self.status()
            if status is not None and status.settled:
                say(f"ray: {APP_NAME} is running at {status.endpoint}/score")
                return status
            shown = status.describe() if status else f"{APP_NAME} not deployed"
            if status is not None and status.status == "DEPLOY_FAILED":
                raise RayServeError(f"{APP_NAME} failed to deploy:\n{shown}")
            if time.monotonic() >= deadline:
                raise RayServeError(f"{APP_NAME} not running after {wait_s:g}s:\n{shown}")
            if shown != last:
                say(f"ray: waiting:\n{shown}")
                last = shown
            time.sleep(interval_s)

    def delete(self) -> bool:
        """Remove our application, keeping the others; False if it was not deployed."""
        details = self.details()
        if APP_NAME not in (details.get("applications") or {}):
            return False
        others = self._others(details)
        if others:
            config = {
                "proxy_location": details.get("proxy_location") or "EveryNode",
                "http_options": _http_options(details),
                "applications": list(others),
            }
            self._request("PUT", "/api/serve/applications/", json=config)
        else:
            self._request("DELETE", "/api/serve/applications/")
        return True


def _http_options(details: Mapping[str, Any]) -> dict[str, Any]:
    http = details.get("http_options") or {}
    return {"host": http.get("host", "0.0.0.0"), "port": http.get("port", 8000)}


def endpoint(details: Mapping[str, Any], nodes: list[Node], replicas: tuple[Replica, ...]) -> str:
    """`http://<host>:<port>` of a Serve proxy: its bound host, else a node's address.

    Each request costs the proxy about as much CPU as grading it, so the node
    is one that holds a replica (a CPU node) when there is one, not the head,
    which is often a GPU node; any proxy routes to every replica.
    """
    http = _http_options(details)
    host = str(http["host"])
    if host in _ANY_HOST:
        proxies = {
            str(proxy.get("node_ip"))
            for proxy in (details.get("proxies") or {}).values()
            if proxy.get("status") == "HEALTHY"
        }
        serving = [r.node_ip for r in replicas if r.state == "RUNNING" and r.node_ip in proxies]
        head = [node.ip for node in nodes if node.head and node.alive]
        alive = [node.ip for node in nodes if node.alive]
        host = next(iter(serving + head + alive), "127.0.0.1")
    return f"http://{_host(host)}:{http['port']}"


def _host(address: str) -> str:
    """`address` as the host part of a URL (IPv6 in brackets)."""
    return f"[{address}]" if ":" in address else address


def app_status(details: Mapping[str, Any], nodes: list[Node]) -> AppStatus | None:
    """Our application in Serve's details, or None."""
    app = (details.get("applications") or {}).get(APP_NAME)
    if app is None:
        return None
    deployment = (app.get("deployments") or {}).get(DEPLOYMENT_NAME) or {}
    ips = {node.node_id: node.ip for node in nodes}
    replicas = tuple(
        Replica(
            replica_id=str(r.get("replica_id", "")),
            state=str(r.get("state", "")),
            node_ip=str(r.get("node_ip") or ips.get(str(r.get("node_id")), "?")),
            node_id=str(r.get("node_id", "")),
        )
        for r in deployment.get("replicas") or []
    )
    user_config = (deployment.get("deployment_config") or {}).get("user_config") or {}
    return AppStatus(
        status=str(app.get("status", "")),
        message=str(app.get("message") or ""),
        deployment_status=str(deployment.get("status", "")),
        deployment_message=str(deployment.get("message") or ""),
        replicas=replicas,
        endpoint=endpoint(details, nodes, replicas),
        metrics=_replica_metrics(replicas, user_config.get("metrics_port")),
        target_replicas=deployment.get("target_num_replicas"),
    )


def _replica_metrics(replicas: tuple[Replica, ...], base: int | None) -> tuple[str, ...]:
    """Each running replica's /metrics URL: ports `base`, `base + 1`... on each node."""
    if not base:
        return ()
    per_node: dict[str, int] = {}
    for replica in replicas:
        if replica.state == "RUNNING":
            per_node[replica.node_ip] = per_node.get(replica.node_ip, 0) + 1
    return tuple(
        f"http://{_host(ip)}:{base + i}/metrics"
        for ip, n in sorted(per_node.items())
        for i in range(n)
    )
