"""A stand-in of the production QA service (the bot's ``qa/main.py``) over a real socket, for tests.

The contract, exactly as production serves it:

* ``POST /qa/`` with a JSON body ``{"question": "...", "dialog_context": [...]}``;
* ``200`` with ``application/json`` ``{"answer": "...", "confluence_url": "..."}``;
* ``404`` with a ``text/plain`` body ``Answer not found`` (the LLM found no answer in the chunk),
  ``Chunk not found`` (no chunk close enough) or ``Answer banned`` (the show/no-show judge refused);
* ``405`` on any other method (aiohttp's ``405: Method Not Allowed``), ``404`` on other paths.

What the service answers is scripted per question: ``srv.answers[question] = (answer, url)`` or
``srv.declines[question] = "Answer banned"``; unscripted questions get ``Chunk not found``. Transport
trouble is scripted per question as a queue of one-shot faults: ``srv.faults[question] = [500, 429, "drop"]``
(``"echo"``: a 500 whose body repeats the request's ``X-`` headers)
(a status code — ``429`` carries ``Retry-After: 0`` —, ``"drop"``: close the connection without a reply, or
``("sleep", seconds)``: answer only after a pause, to outlast a client's timeout).

Every request is recorded (``srv.requests``: method, path, headers, parsed body, arrival ``time.monotonic()``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

DECLINES = ("Answer not found", "Chunk not found", "Answer banned")


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float


@dataclass
class ProductionQA:
    answers: dict[str, tuple[str, str]] = field(default_factory=dict)
    declines: dict[str, str] = field(default_factory=dict)
    faults: dict[str, list[Any]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # silence
                pass

            def _record(self, body: Any) -> None:
                with srv._lock:
                    srv.requests.append(Request(self.command, self.path, dict(self.headers.items()), body, time.monotonic()))

            def _send(self, status: int, body: str, ctype: str, headers: dict[str, str] | None = None) -> None:
                data = body.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _not_allowed(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                self._record(None)
                self._send(405, "405: Method Not Allowed", "text/plain; charset=utf-8", {"Allow": "POST"})

            do_GET = do_PUT = do_DELETE = do_PATCH = _not_allowed  # noqa: N815

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError):
                    body = None
                self._record(body)
                if self.path.split("?", 1)[0] != "/qa/":
                    self._send(404, "404: Not Found", "text/plain; charset=utf-8")
                    return
                if not isinstance(body, dict) or not isinstance(body.get("question"), str):
                    self._send(500, "500 Internal Server Error", "text/plain; charset=utf-8")
                    return
                question = body["question"]
                fault = None
                with srv._lock:
                    queue = srv.faults.get(question)
                    if queue:
                        fault = queue.pop(0)
                if isinstance(fault, tuple) and fault[0] == "sleep":  # slower than the client's timeout
                    time.sleep(fault[1])
                    fault = None
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if fault == "echo":  # a misbehaving proxy: a 500 whose body repeats the request's X- headers
                    echoed = {k: v for k, v in self.headers.items() if k.lower().startswith("x-")}
                    self._send(500, "bad gateway; request headers: " + json.dumps(echoed), "text/plain; charset=utf-8")
                    return
                if isinstance(fault, int):
                    extra = {"Retry-After": "0"} if fault == 429 else None
                    self._send(fault, f"{fault}: scripted", "text/plain; charset=utf-8", extra)
                    return
                if question in srv.answers:
                    answer, url = srv.answers[question]
                    self._send(200, json.dumps({"answer": answer, "confluence_url": url}, ensure_ascii=False),
                               "application/json; charset=utf-8")
                    return
                self._send(404, srv.declines.get(question, "Chunk not found"), "text/plain; charset=utf-8")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def posts(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.method == "POST"]

    def start(self) -> ProductionQA:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> ProductionQA:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


@pytest.fixture
def production_qa() -> Iterator[ProductionQA]:
    with ProductionQA() as srv:
        yield srv
