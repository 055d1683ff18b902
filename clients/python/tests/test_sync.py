"""The sync client against a real server: the work cycle, retries, and
problem errors with their code and holder."""

from __future__ import annotations

import inspect

import pytest

from tether_client import (
    OPERATIONS,
    AsyncClient,
    AuthError,
    BadRequestError,
    Client,
    ConflictError,
    LeaseLost,
    LeaseLostError,
    NotFoundError,
    ProblemError,
)


def test_every_operation_is_a_method_of_both_clients() -> None:
    assert len(OPERATIONS) >= 60
    for op_id, (method, path, name) in OPERATIONS.items():
        sync = getattr(Client, name)
        async_ = getattr(AsyncClient, name)
        assert not inspect.iscoroutinefunction(sync), op_id
        assert inspect.iscoroutinefunction(async_), op_id
        assert path in (sync.__doc__ or ""), op_id


def test_create_claim_next_complete(head: Client, alice: Client, queue: str) -> None:
    node = head.create_node({"type": "task", "queue": queue, "title": "write it", "props": {"n": 1}})
    assert node["status"] == "queued"
    assert node["props"] == {"n": 1}

    claim = alice.claim_next(queue, {"ttl_ms": 30000})
    assert claim is not None
    assert claim["node"]["id"] == node["id"]
    assert claim["lease"]["by"] == "alice"
    assert claim["lease"]["ttl_ms"] == 30000

    done = alice.complete_node(node["id"], {"fence": claim["lease"]["fence"], "result": {"pr": 42}})
    assert done["status"] == "done"
    got = head.get_node(node["id"])
    assert got["status"] == "done"
    assert got["result"] == {"pr": 42}
    assert got["lease"] is None

    # Nothing left: claim-next answers 204, which is None.
    assert alice.claim_next(queue, {"wait_ms": 50}) is None


def test_fail_retries_then_dead(head: Client, alice: Client, queue: str) -> None:
    node_id = head.create_node({"type": "task", "queue": queue, "max_attempts": 2})["id"]

    first = alice.claim_next(queue)
    assert first is not None and first["node"]["id"] == node_id
    failed = alice.fail_node(node_id, {"error": "flaky", "retry_in_ms": 0, "fence": first["lease"]["fence"]})
    assert failed["status"] == "queued"
    assert failed["node"]["attempts"] == 1
    assert failed["node"]["error"] == "flaky"

    second = alice.claim_next(queue)
    assert second is not None
    assert second["lease"]["fence"] > first["lease"]["fence"]
    out = alice.fail_node(node_id, {"error": "again", "fence": second["lease"]["fence"]})
    assert out["status"] == "dead"
    assert head.get_node(node_id)["attempts"] == 2
    assert alice.claim_next(queue) is None


def test_conflict_carries_the_holder(head: Client, alice: Client, bob: Client, make_node) -> None:
    node_id = make_node()
    lease = alice.claim_node(node_id, {"ttl_ms": 60000})["lease"]

    with pytest.raises(ConflictError) as caught:
        bob.claim_node(node_id)
    e = caught.value
    assert type(e) is ConflictError
    assert e.status == 409
    assert e.code == "conflict"
    assert e.holder == "alice"
    assert e.expires == lease["expires"]
    assert e.expires_at is not None
    assert e.type and e.title
    assert e.problem["code"] == "conflict"
    assert "409 conflict" in str(e)
    # Nothing changed: alice still holds it with the same fence.
    assert head.get_node(node_id)["lease"]["fence"] == lease["fence"]


def test_lease_lost_after_a_takeover(head: Client, alice: Client, bob: Client, make_node) -> None:
    node_id = make_node()
    stale = alice.claim_node(node_id)["lease"]
    head.release_node(node_id, {})
    bob.claim_node(node_id)

    with pytest.raises(LeaseLostError) as caught:
        alice.complete_node(node_id, {"fence": stale["fence"]})
    e = caught.value
    assert isinstance(e, ConflictError) and isinstance(e, LeaseLost)
    assert e.code == "lease_lost"
    assert e.holder == "bob"
    assert head.get_node(node_id)["status"] == "running"


def test_bad_input_is_a_problem_and_changes_nothing(head: Client, alice: Client, queue: str) -> None:
    with pytest.raises(BadRequestError) as caught:
        head.create_node({"type": "task", "queue": queue, "max_attempts": 0})
    assert caught.value.status == 400
    assert caught.value.code == "bad_request"
    assert head.list_nodes(queue=queue)["items"] == []

    with pytest.raises(NotFoundError) as nf:
        head.get_node("no-such-node")
    assert nf.value.code == "not_found"

    with pytest.raises(AuthError) as forbidden:
        alice.create_token({"sub": "x", "roles": ["admin"]})
    assert forbidden.value.code == "forbidden"


def test_dot_segment_ids_never_change_the_route(head: Client) -> None:
    # "." and ".." would be resolved away by the URL library: /v1/nodes/..
    # is /v1/. The client refuses them before sending anything.
    for bad in (".", ".."):
        with pytest.raises(ValueError, match="must not be"):
            head.get_node(bad)
        with pytest.raises(ValueError, match="must not be"):
            head.list_node_events(bad)


def test_no_token_is_unauthorized(server) -> None:
    with Client(server.url) as anonymous:
        with pytest.raises(AuthError) as caught:
            anonymous.list_queues()
    assert caught.value.status == 401
    assert caught.value.code == "unauthorized"
    assert isinstance(caught.value, ProblemError)


def test_a_tour_of_the_api(server, head: Client, alice: Client, queue: str) -> None:
    """One call of many operations, for the shapes the generator handles:
    query lists and booleans, headers, merge patches, raw bytes, text."""
    parent = head.create_node({"type": "epic", "id": queue + "-parent"})
    batch = head.create_nodes_batch(
        {"items": [{"type": "task", "queue": queue, "parent": parent["id"], "labels": ["x"]} for _ in range(3)]},
        idempotency_key=queue,
    )
    assert len(batch["items"]) == 3
    again = head.create_nodes_batch(
        {"items": [{"type": "task", "queue": queue, "parent": parent["id"], "labels": ["x"]} for _ in range(3)]},
        idempotency_key=queue,
    )
    assert [n["id"] for n in again["items"]] == [n["id"] for n in batch["items"]]

    listed = head.list_nodes(queue=queue, ready=True, limit=2)
    assert len(listed["items"]) == 2 and listed["next_cursor"]
    rest = head.list_nodes(queue=queue, ready=True, cursor=listed["next_cursor"])
    assert len(rest["items"]) == 1

    child = batch["items"][0]
    patched = head.update_node(child["id"], {"title": "renamed", "props": {"k": 1}}, if_match=f'"{child["version"]}"')
    assert patched["title"] == "renamed"
    with pytest.raises(ConflictError) as stale:
        head.update_node(child["id"], {"title": "again"}, if_match=f'"{child["version"]}"')
    assert stale.value.code == "precondition_failed"
    assert stale.value.current_version == patched["version"]

    edges = head.list_node_edges(parent["id"], dir="both")
    assert len(edges["items"]) >= 3
    sub = head.get_subgraph(parent["id"], depth=1)
    assert len(sub["nodes"]) == 4

    many = alice.claim_next_many(queue, {"max": 2, "ttl_ms": 30000})
    assert len(many["items"]) == 2
    held = many["items"][0]
    fence = held["lease"]["fence"]
    ext = alice.extend_lease(held["node"]["id"], {"ms": 60000, "fence": fence})
    assert ext["lease"]["fence"] == fence
    prog = alice.report_progress(held["node"]["id"], {"pct": 50, "message": "half", "fence": fence})
    assert prog["node"]["progress"]["message"] == "half"
    results = alice.run_batch(
        {"ops": [{"op": "complete", "id": it["node"]["id"], "fence": it["lease"]["fence"]} for it in many["items"]]}
    )
    assert [r["status"] for r in results["results"]] == [200, 200]

    head.create_comment(child["id"], {"body": "looks good"})
    assert head.list_comments(child["id"])["items"][0]["body"] == "looks good"
    events = head.list_node_events(child["id"])
    assert events["items"]

    queues = {q["queue"]: q for q in head.list_queues()["items"]}
    assert queue in queues
    assert head.pause_queue(queue)["paused"] is True
    assert head.resume_queue(queue)["paused"] is False

    blob = alice.upload_blob(b"hello, tether", content_type="text/plain")
    assert blob["size"] == 13
    assert alice.get_blob(blob["sha256"]) == b"hello, tether"
    assert alice.get_blob(blob["sha256"], range="bytes=0-4") == b"hello"

    assert head.get_health()["status"]
    assert head.head_health() is None
    assert "openapi:" in head.get_open_api()
    assert head.get_tenant()["id"] == "default"
    assert head.list_events(limit=1)["items"]
    assert head.list_leases(queue=queue)["items"] == []
    init = alice.mcp_post(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "py", "version": "1"}},
        }
    )
    assert init is not None and init["result"]["serverInfo"]["name"] == "tether"
    head.delete_node(rest["items"][0]["id"], force=True)
    with pytest.raises(NotFoundError):
        head.get_node(rest["items"][0]["id"])


def test_a_finished_event_stream_reads_as_its_last_event() -> None:
    from tether_client._transport import _last_event_data

    stream = 'event: message\nid: 1\ndata: {"a":\ndata:  1}\n\n: a comment\ndata: {"jsonrpc": "2.0", "id": 7}\n'
    assert _last_event_data(stream) == {"jsonrpc": "2.0", "id": 7}
    assert _last_event_data(": only a comment\n\n") is None
