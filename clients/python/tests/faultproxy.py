"""A reverse proxy in front of the test server that fails the next requests
of one method and path with a status (and Retry-After: 0), then passes
every request through: a server that answers 503 twice and then succeeds.
The Go twin is clienttest.FaultProxy."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import List, Optional

import httpx

REFUSE = "refuse"  # answer without passing the request on
LOSE_ANSWER = "lose_answer"  # pass it on, then answer in the server's place

_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}


class FaultProxy:
    def __init__(self, target: str) -> None:
        self.target = target
        self.lock = threading.Lock()
        self.method = ""
        self.path = ""
        self.status = 0
        self.mode = REFUSE
        self.fails = 0
        self.keys: List[str] = []
        self.upstream = httpx.Client(timeout=30)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _any(self) -> None:
                proxy._handle(self)

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = do_HEAD = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.upstream.close()

    def fail_next(self, n: int, status: int, mode: str, method: str, path: str) -> None:
        with self.lock:
            self.method, self.path, self.status, self.mode, self.fails, self.keys = method, path, status, mode, n, []

    def seen(self) -> List[str]:
        """The Idempotency-Key ("" when absent) of every request to the failing path since fail_next."""
        with self.lock:
            return list(self.keys)

    def _take(self, method: str, path: str, key: Optional[str]) -> Optional[str]:
        with self.lock:
            if method != self.method or path != self.path:
                return None
            self.keys.append(key or "")
            if self.fails == 0:
                return None
            self.fails -= 1
            return self.mode

    def _forward(self, h: BaseHTTPRequestHandler, body: bytes) -> httpx.Response:
        headers = {k: v for k, v in h.headers.items() if k.lower() not in _HOP and k.lower() != "host"}
        return self.upstream.request(h.command, self.target + h.path, headers=headers, content=body)

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        mode = self._take(h.command, h.path.split("?")[0], h.headers.get("Idempotency-Key"))
        if mode is None:
            r = self._forward(h, body)
            h.send_response(r.status_code)
            for k, v in r.headers.items():
                if k.lower() not in _HOP:
                    h.send_header(k, v)
            h.send_header("Content-Length", str(len(r.content)))
            h.end_headers()
            h.wfile.write(r.content)
            return
        if mode == LOSE_ANSWER:
            self._forward(h, body)
        status = self.status
        code = "rate_limited" if status == 429 else "unavailable"
        doc = json.dumps({"type": "urn:tether:problem:" + code, "title": "injected", "status": status, "code": code}).encode()
        h.send_response(status)
        h.send_header("Retry-After", "0")
        h.send_header("Content-Type", "application/problem+json")
        h.send_header("Content-Length", str(len(doc)))
        h.end_headers()
        h.wfile.write(doc)
