"""A scripted stand-in for the reward service, for the failures a real one will not show."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """What the stand-in answers: a status, a JSON body and headers."""

    status: int = 200
    body: Any = 0.0
    headers: dict[str, str] = field(default_factory=dict)


Route = Callable[[Any], Reply]


class StandIn:
    """A scripted HTTP server on 127.0.0.1: each path answers with a function of the body.

    Unrouted paths answer 404; every request is recorded as `(method, path, body)`.
    """

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def route(self, path: str, route: Route) -> None:
        self.routes[path] = route

    def paths(self, method: str = "POST") -> list[str]:
        return [path for m, path, _ in self.requests if m == method]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, method: str) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                stand_in.requests.append((method, self.path, body))
                route = stand_in.routes.get(self.path)
                reply = route(body) if route else Reply(404, {"error": "not found"})
                data = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> StandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def grade_like_math(body: Any) -> float:
    """The stand-in's grading: 1.0 when the response ends in `\\boxed{<label>}`."""
    label = body["label"]
    if isinstance(label, dict):
        label = label.get("answer")
    return 1.0 if str(body["response"]).endswith(f"\\boxed{{{label}}}") else 0.0
