"""A real Tether server for the tests: the binary at $TETHER_BIN (else built
with `go build` from this checkout) serving on a free loopback port with a
fresh data directory, and clients for identities of each role."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator

import httpx
import pytest

import tether_client
from tether_client import Client

REPO = Path(__file__).resolve().parents[3]


def pytest_report_header() -> str:
    # CI checks that this is the installed package, not the source tree.
    return f"tether_client: {tether_client.__file__}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def mint(secret: str, sub: str, role: str, tenant: str = "default") -> str:
    """An HS256 JWT for sub with one role, valid for an hour."""
    now = int(time.time())
    head = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = _b64(json.dumps({"sub": sub, "tid": tenant, "roles": [role], "iat": now, "exp": now + 3600}).encode())
    signed = f"{head}.{claims}"
    sig = hmac.new(secret.encode(), signed.encode(), hashlib.sha256).digest()
    return f"{signed}.{_b64(sig)}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, url: str, secret: str) -> None:
        self.url = url
        self.secret = secret

    def token(self, sub: str, role: str) -> str:
        return mint(self.secret, sub, role)

    def client(self, sub: str, role: str, **kw: object) -> Client:
        return Client(self.url, self.token(sub, role), **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    work = tmp_path_factory.mktemp("tether")
    binary = os.environ.get("TETHER_BIN")
    if not binary:
        binary = str(work / "tether")
        subprocess.run(["go", "build", "-o", binary, "./cmd/tether"], cwd=REPO, check=True)
    secret = secrets.token_hex(32)
    for attempt in range(5):
        port = _free_port()
        log = open(work / f"server-{attempt}.log", "wb")
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", str(work)),
            "TETHER_ADDR": f"127.0.0.1:{port}",
            "TETHER_DATA_DIR": str(work / f"data-{attempt}"),
            "TETHER_JWT_SECRET": secret,
        }
        proc = subprocess.Popen([binary, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        ready = False
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                if httpx.get(url + "/ready", timeout=2).status_code == 200:
                    ready = True
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)  # polling a process we do not control; no signal to wait on
        if ready:
            break
        proc.kill()
        proc.wait()
        log.close()
    else:
        raise RuntimeError("could not start the server: " + (work / "server-4.log").read_text()[-2000:])
    try:
        yield Server(url, secret)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture
def head(server: Server) -> Iterator[Client]:
    """A dispatcher."""
    with server.client("head", "dispatcher") as c:
        yield c


@pytest.fixture
def alice(server: Server) -> Iterator[Client]:
    """A worker."""
    with server.client("alice", "worker") as c:
        yield c


@pytest.fixture
def bob(server: Server) -> Iterator[Client]:
    """Another worker."""
    with server.client("bob", "worker") as c:
        yield c


@pytest.fixture
def queue() -> str:
    """A queue of the test's own."""
    return "q-" + uuid.uuid4().hex[:12]


@pytest.fixture
def make_node(head: Client, queue: str) -> Callable[..., str]:
    """Creates a node in the test's queue; returns its id."""

    def make(**fields: object) -> str:
        body = {"type": "task", "queue": queue, **fields}
        return head.create_node(body)["id"]  # type: ignore[arg-type]

    return make
