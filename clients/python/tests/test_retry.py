"""The clients' retries against a real server behind a fault proxy that
answers 503 (or 429) twice and then passes the call through."""

from __future__ import annotations

import asyncio
import socket
from typing import Iterator

import httpx
import pytest

from faultproxy import LOSE_ANSWER, REFUSE, FaultProxy
from tether_client import AsyncClient, Client, RetryPolicy, TransientError

FAST = RetryPolicy(base_delay=0.001, max_delay=0.01)


@pytest.fixture
def proxy(server) -> Iterator[FaultProxy]:
    p = FaultProxy(server.url)
    yield p
    p.close()


def via(server, proxy: FaultProxy, sub: str, role: str, **kw: object) -> Client:
    return Client(proxy.url, server.token(sub, role), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", [REFUSE, LOSE_ANSWER])
def test_create_through_two_503s_creates_once(server, proxy, head: Client, queue: str, mode: str) -> None:
    with via(server, proxy, "head", "dispatcher", retry=FAST) as c:
        proxy.fail_next(2, 503, mode, "POST", "/v1/nodes")
        node = c.create_node({"type": "task", "queue": queue})
    keys = proxy.seen()
    assert len(keys) == 3 and keys[0] and keys == [keys[0]] * 3
    assert [n["id"] for n in head.list_nodes(queue=queue)["items"]] == [node["id"]]


def test_retries_off_passes_the_503_on(server, proxy, head: Client, queue: str) -> None:
    with via(server, proxy, "head", "dispatcher", retry=None) as c:
        proxy.fail_next(2, 503, LOSE_ANSWER, "POST", "/v1/nodes")
        with pytest.raises(TransientError) as e:
            c.create_node({"type": "task", "queue": queue})
    assert e.value.status == 503
    assert proxy.seen() == [""]
    assert len(head.list_nodes(queue=queue)["items"]) == 1  # the one try, applied


def test_claim_and_renew_through_lost_answers(server, proxy, make_node) -> None:
    node_id = make_node()
    with via(server, proxy, "w1", "worker", retry=FAST) as w:
        proxy.fail_next(2, 503, LOSE_ANSWER, "POST", f"/v1/nodes/{node_id}/claim")
        claim = w.claim_node(node_id, {"ttl_ms": 30000})
        assert claim["renewed"]  # the retry found the first try's claim
        fence = claim["lease"]["fence"]
        proxy.fail_next(2, 503, LOSE_ANSWER, "POST", f"/v1/nodes/{node_id}/renew")
        assert w.renew_lease(node_id, {"fence": fence})["lease"]["fence"] == fence
        assert len(proxy.seen()) == 3
        assert w.get_node(node_id)["attempts"] == 1


def test_claim_next_through_two_lost_answers_claims_once(server, proxy, head: Client, queue: str) -> None:
    ids = [head.create_node({"type": "task", "queue": queue})["id"] for _ in range(3)]
    with via(server, proxy, "w1", "worker", retry=FAST) as w:
        proxy.fail_next(2, 503, LOSE_ANSWER, "POST", f"/v1/queues/{queue}/claim")
        claim = w.claim_next(queue, {"ttl_ms": 30000})
    keys = proxy.seen()
    assert len(keys) == 3 and keys[0] and keys == [keys[0]] * 3
    assert claim is not None
    running = [n for n in head.list_nodes(queue=queue)["items"] if n["status"] == "running"]
    assert [n["id"] for n in running] == [claim["node"]["id"]]
    assert running[0]["attempts"] == 1 and claim["node"]["id"] in ids


def test_an_unkeyed_write_is_not_repeated_on_503_but_is_on_429(server, proxy, make_node) -> None:
    node_id = make_node()
    with via(server, proxy, "w1", "worker", retry=FAST) as w:
        fence = w.claim_node(node_id, {"ttl_ms": 30000})["lease"]["fence"]
        proxy.fail_next(1, 503, REFUSE, "POST", f"/v1/nodes/{node_id}/complete")
        with pytest.raises(TransientError):
            w.complete_node(node_id, {"fence": fence})
        assert len(proxy.seen()) == 1
        proxy.fail_next(2, 429, REFUSE, "POST", f"/v1/nodes/{node_id}/complete")
        assert w.complete_node(node_id, {"fence": fence})["status"] == "done"
        assert len(proxy.seen()) == 3


def test_async_create_through_two_503s_creates_once(server, proxy, head: Client, queue: str) -> None:
    async def main() -> str:
        async with AsyncClient(proxy.url, server.token("head", "dispatcher"), retry=FAST) as c:
            proxy.fail_next(2, 503, LOSE_ANSWER, "POST", "/v1/nodes")
            return (await c.create_node({"type": "task", "queue": queue}))["id"]

    node_id = asyncio.run(asyncio.wait_for(main(), 30))
    assert len(proxy.seen()) == 3
    assert [n["id"] for n in head.list_nodes(queue=queue)["items"]] == [node_id]


def test_a_refused_connection_is_tried_again() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens
    tries = []

    class Counting(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            tries.append(request.url.path)
            return super().handle_request(request)

    with Client(f"http://127.0.0.1:{port}", "t", retry=FAST, transport=Counting()) as c:
        with pytest.raises(httpx.ConnectError):
            c.complete_node("n1", {"fence": 1})
    assert len(tries) == 4
