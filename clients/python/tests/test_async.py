"""AsyncClient and AsyncLeaseKeeper against a real server. Each test runs
its own event loop (asyncio.run), so no pytest plugin is needed."""

from __future__ import annotations

import asyncio

import pytest

from tether_client import AsyncClient, AsyncLeaseKeeper, ConflictError, LeaseLostError


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_async_work_cycle_with_a_keeper(server, head, queue: str) -> None:
    async def main() -> None:
        async with AsyncClient(server.url, server.token("erin", "worker")) as erin:
            ids = [head.create_node({"type": "task", "queue": queue})["id"] for _ in range(3)]
            claims = await asyncio.gather(*(erin.claim_next(queue, {"ttl_ms": 30000}) for _ in ids))
            assert sorted(c["node"]["id"] for c in claims if c) == sorted(ids)

            renewals: "asyncio.Queue[dict]" = asyncio.Queue()
            kept = head.create_node({"type": "task"})["id"]
            first = await erin.claim_node(kept, {"ttl_ms": 1500})
            async with erin.keep(first, on_renew=renewals.put_nowait) as lease:
                assert isinstance(lease, AsyncLeaseKeeper)
                for _ in range(4):  # 1.5 s and more: past the first expiry
                    r = await asyncio.wait_for(renewals.get(), 10)
                    assert r["lease"]["fence"] == first["lease"]["fence"]
                done = await lease.complete({"result": {"async": True}})
            assert done["status"] == "done"
            assert lease._task is not None and lease._task.done()
            assert renewals.empty()

            for c in claims:
                await erin.complete_node(c["node"]["id"], {"fence": c["lease"]["fence"]})
            assert await erin.claim_next(queue, {"wait_ms": 50}) is None

    run(main())


def test_async_problem_and_loss(server, head, queue: str) -> None:
    async def main() -> None:
        async with AsyncClient(server.url, server.token("frank", "worker")) as frank, AsyncClient(
            server.url, server.token("grace", "worker")
        ) as grace:
            node_id = head.create_node({"type": "task", "queue": queue})["id"]
            # The keeper's first renewal (a third of the TTL) must come after
            # grace's claim, or it finds no lease at all (holder None).
            claim = await frank.claim_node(node_id, {"ttl_ms": 3000})
            with pytest.raises(ConflictError) as caught:
                await grace.claim_node(node_id)
            assert caught.value.code == "conflict"
            assert caught.value.holder == "frank"

            keeper = frank.keep(claim)
            head.release_node(node_id, {})
            await grace.claim_node(node_id, {"ttl_ms": 60000})
            await asyncio.wait_for(keeper.lost.wait(), 10)
            assert isinstance(keeper.cause, LeaseLostError)
            assert keeper.cause.holder == "grace"
            assert await keeper.stop() is keeper.cause

    run(main())


def test_async_raising_block_fails_the_node(server, head, queue: str) -> None:
    async def main() -> None:
        async with AsyncClient(server.url, server.token("heidi", "worker")) as heidi:
            node_id = head.create_node({"type": "task", "queue": queue})["id"]
            claim = await heidi.claim_next(queue)
            with pytest.raises(ValueError):
                async with heidi.keep(claim):
                    raise ValueError("bad input")
            node = head.get_node(node_id)
            assert node["error"] == "ValueError: bad input"
            assert node["lease"] is None

    run(main())
