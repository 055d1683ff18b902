"""LeaseKeeper against a real server: it renews at a third of the TTL, keeps
the lease past its first expiry, signals loss, retries transient failures
until the expiry, and stops renewing when the node is completed, failed or
released."""

from __future__ import annotations

import queue as queues
import threading
import time
import httpx
import pytest

from tether_client import (
    Client,
    LeaseExpired,
    LeaseKeeper,
    LeaseLost,
    LeaseLostError,
    NotFoundError,
    TransientError,
)

WAIT = 10.0  # seconds to wait for a signal before failing


class Signals:
    """A keeper's planned waits and renewals as queues a test blocks on."""

    def __init__(self) -> None:
        self.waits: "queues.Queue[float]" = queues.Queue()
        self.renewals: "queues.Queue[dict]" = queues.Queue()

    def attach(self, keeper: LeaseKeeper) -> LeaseKeeper:
        keeper._on_wait = self.waits.put
        keeper._on_renew = self.renewals.put
        return keeper

    def next_wait(self) -> float:
        return self.waits.get(timeout=WAIT)

    def next_renewal(self) -> dict:
        return self.renewals.get(timeout=WAIT)


def test_renews_at_a_third_of_the_ttl_past_the_first_expiry(head: Client, alice: Client, make_node) -> None:
    node_id = make_node()
    claim = alice.claim_node(node_id, {"ttl_ms": 1500})
    first = claim["lease"]
    sig = Signals()
    keeper = sig.attach(LeaseKeeper(alice, claim))

    with keeper.start():
        assert 0 <= sig.next_wait() <= 0.5  # a third of 1500 ms, less the time since the claim
        for _ in range(5):  # 2 s and more: past the first expiry
            renewed = sig.next_renewal()
            assert renewed["lease"]["fence"] == first["fence"]
            assert sig.next_wait() == pytest.approx(0.5)
        assert time.time() * 1000 > first["expires"]
        live = head.get_node(node_id)["lease"]
        assert live is not None and live["fence"] == first["fence"]
        assert live["expires"] > first["expires"] + 1000
        assert not keeper.lost.is_set()
        done = keeper.complete({"result": {"kept": True}})

    assert done["status"] == "done"
    assert not keeper._thread.is_alive()  # completing stopped the renewals
    assert keeper.stop() is None
    assert head.get_node(node_id)["result"] == {"kept": True}


def test_signals_loss_when_the_lease_is_taken(head: Client, alice: Client, bob: Client, make_node) -> None:
    node_id = make_node()
    claim = alice.claim_node(node_id, {"ttl_ms": 900})
    lost: "queues.Queue[LeaseLost]" = queues.Queue()
    keeper = alice.keep(claim, on_lost=lost.put)

    head.release_node(node_id, {})
    bob.claim_node(node_id, {"ttl_ms": 60000})

    cause = lost.get(timeout=WAIT)
    assert keeper.lost.wait(WAIT)
    assert isinstance(cause, LeaseLostError)
    assert cause.code == "lease_lost"
    assert cause.holder == "bob"
    assert keeper.cause is cause
    with pytest.raises(LeaseLost):
        keeper.check()
    assert keeper.stop() is cause
    assert keeper.stop() is cause  # stop is idempotent


class Flaky(httpx.BaseTransport):
    """Fails the renewals it is told to, alternately with a dropped
    connection and a 503 problem, and passes everything else on."""

    def __init__(self, failures: int) -> None:
        self.inner = httpx.HTTPTransport()
        self.failures = failures
        self.attempts = 0
        self.lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not request.url.path.endswith("/renew"):
            return self.inner.handle_request(request)
        with self.lock:
            self.attempts += 1
            fail = self.failures > 0
            self.failures -= 1
            n = self.attempts
        if not fail:
            return self.inner.handle_request(request)
        if n % 2 == 1:
            raise httpx.ConnectError("connection reset by peer", request=request)
        return httpx.Response(
            503,
            headers={"Content-Type": "application/problem+json"},
            json={"type": "urn:tether:problem:unavailable", "title": "Service Unavailable", "status": 503, "code": "unavailable"},
            request=request,
        )

    def close(self) -> None:
        self.inner.close()


def test_retries_transient_failures_with_backoff(server, make_node) -> None:
    flaky = Flaky(failures=3)
    with server.client("carol", "worker", transport=flaky, retry=None) as carol:
        node_id = make_node()
        claim = carol.claim_node(node_id, {"ttl_ms": 3000})
        sig = Signals()
        keeper = sig.attach(LeaseKeeper(carol, claim, backoff=(0.1, 0.4)))
        with keeper.start():
            sig.next_wait()
            waits = [sig.next_wait() for _ in range(3)]
            for got, base in zip(waits, (0.1, 0.2, 0.4)):
                assert base / 2 <= got < base  # jittered, doubling
            sig.next_renewal()
            assert flaky.attempts == 4
            assert not keeper.lost.is_set()
            assert keeper.last_error is None
            keeper.release()
        assert keeper.stop() is None


def test_gives_up_at_the_expiry(server, make_node) -> None:
    flaky = Flaky(failures=1 << 20)
    with server.client("dave", "worker", transport=flaky, retry=None) as dave:
        node_id = make_node()
        claim = dave.claim_node(node_id, {"ttl_ms": 600})
        keeper = dave.keep(claim, backoff=(0.05, 0.1))
        assert keeper.lost.wait(WAIT)
        assert isinstance(keeper.cause, LeaseExpired)
        assert "without a successful renewal" in str(keeper.cause)
        assert isinstance(keeper.cause.__cause__, (httpx.ConnectError, TransientError))
        assert keeper.stop() is keeper.cause


def test_a_raising_block_fails_the_node(head: Client, alice: Client, make_node) -> None:
    node_id = make_node()
    claim = alice.claim_node(node_id, {"ttl_ms": 30000})
    with pytest.raises(RuntimeError, match="boom"):
        with alice.keep(claim):
            raise RuntimeError("boom")
    node = head.get_node(node_id)
    assert node["status"] in ("queued", "failed")
    assert node["error"] == "RuntimeError: boom"
    assert node["lease"] is None


def test_release_gives_the_attempt_back(head: Client, alice: Client, make_node) -> None:
    node_id = make_node()
    claim = alice.claim_node(node_id, {"ttl_ms": 30000})
    with alice.keep(claim) as lease:
        out = lease.release({"reason": "not mine"})
    assert out["status"] == "queued"
    node = head.get_node(node_id)
    assert node["attempts"] == 0
    assert node["lease"] is None


def test_a_deleted_node_ends_the_lease_at_once(head: Client, alice: Client, make_node) -> None:
    node_id = make_node()
    claim = alice.claim_node(node_id, {"ttl_ms": 900})
    keeper = alice.keep(claim)
    head.delete_node(node_id, force=True)

    assert keeper.lost.wait(WAIT)
    cause = keeper.cause
    assert type(cause) is LeaseLost
    assert cause.code == "not_found"
    assert isinstance(cause.__cause__, NotFoundError)
    assert keeper.stop() is cause


def test_a_raising_callback_does_not_stop_the_renewals(alice: Client, make_node, caplog) -> None:
    node_id = make_node()
    claim = alice.claim_node(node_id, {"ttl_ms": 1500})
    calls: "queues.Queue[int]" = queues.Queue()

    def broken(_: dict) -> None:
        calls.put(1)
        raise RuntimeError("a bug in the caller's callback")

    with alice.keep(claim, on_renew=broken) as lease:
        for _ in range(3):
            calls.get(timeout=WAIT)
        assert not lease.lost.is_set()
        lease.complete()
    assert f"on_renew of node {node_id} raised" in caplog.text
