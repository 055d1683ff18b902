"""Lease keepers: hold a lease while its holder works, as the Go client's Keep.

A keeper renews the lease at a third of its TTL (passing its fence and
session, so it renews this lease and no later one). A renewal that fails
transiently (no answer, 408, 429, 5xx) is retried with backoff until the
lease's expiry, reckoned on the keeper's own monotonic clock from when it
sent the last renewal that succeeded, so clock skew cannot make it late. A
``lease_lost`` answer (lapsed, taken, stale fence), a 404 or any other 4xx
ends the lease at once: no retry of the same request can succeed.

Loss is signalled three ways: ``lost`` (a threading.Event, or asyncio.Event
for the async keeper) is set, ``cause`` holds a LeaseLost exception, and
``on_lost`` is called. ``check()`` raises the cause.

The keeper stops renewing on ``complete``, ``fail`` and ``release`` (which
pass the lease's fence for you), on ``stop()``, and when its ``with`` block
ends. A block that raises fails the node with the exception's text (the node
is retried while attempts remain) and re-raises; a block that ends without
an outcome only stops renewing, and the lease lapses at its expiry.

Renewing sets the expiry to now plus the lease's TTL; a keeper does not
extend a lease.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple, Union

import httpx

from .errors import LeaseExpired, LeaseLost, ProblemError
from .models import (
    ClaimResponse,
    CompleteRequest,
    CompleteResponse,
    FailRequest,
    Lease,
    NodeAnswer,
    ProgressRequest,
    ProgressResponse,
    ReleaseRequest,
    ReleaseResponse,
    RenewResponse,
)

if TYPE_CHECKING:  # pragma: no cover
    from .client import AsyncClient, Client

__all__ = ["LeaseKeeper", "AsyncLeaseKeeper"]

_MAX_ERROR = 65536
# A renewal never waits longer than this for its answer, so that a hung
# connection is retried, and a sync keeper's stop() does not wait on it long.
_MAX_RENEWAL_WAIT = 30.0

log = logging.getLogger("tether_client")


class _Plan:
    """The schedule of one keeper: when to renew, how long to back off, when
    the lease is gone. Times are on the monotonic clock, in seconds."""

    def __init__(
        self,
        lease: Lease,
        interval: Optional[float],
        backoff: Tuple[float, float],
        clock: Callable[[], float],
    ) -> None:
        self.clock = clock
        self.interval = interval
        self.backoff_min = backoff[0] if backoff[0] > 0 else 0.2
        self.backoff_max = max(self.backoff_min, backoff[1])
        self.backoff = self.backoff_min
        now = clock()
        self.ttl = lease.get("ttl_ms", 0) / 1000
        # The server's expiry may be skewed against our clock; now + ttl
        # bounds it from above either way.
        left = self.ttl
        if lease.get("expires"):
            left = min(left, lease["expires"] / 1000 - time.time())
        if self.ttl <= 0:
            left = 0.0
        self.deadline = now + left

    def every(self) -> float:
        """How long after a renewal the next one is due."""
        if self.interval and 0 < self.interval < self.ttl:
            return self.interval
        return self.ttl / 3

    def first_wait(self) -> float:
        """Until a third of the TTL has passed since the lease was made good:
        at once for a lease that is already old."""
        return max(0.0, self.deadline - self.clock() - self.ttl + self.every())

    def renewed(self, sent: float, lease: Lease) -> float:
        if lease.get("ttl_ms"):
            self.ttl = lease["ttl_ms"] / 1000
        self.deadline = sent + self.ttl
        self.backoff = self.backoff_min
        return self.every()

    def request_timeout(self, sent: float) -> float:
        """A renewal gives up at the expiry as we reckon it (or after the
        least backoff, when that is later), and after _MAX_RENEWAL_WAIT."""
        return max(min(self.deadline - sent, _MAX_RENEWAL_WAIT), self.backoff_min)

    def retry_wait(self, err: BaseException) -> Optional[float]:
        """How long to wait before retrying after a transient error; None
        when the expiry has passed."""
        now = self.clock()
        if now >= self.deadline:
            return None
        after = err.retry_after if isinstance(err, ProblemError) and err.retry_after else 0.0
        wait = min(max(_jitter(self.backoff), after), self.deadline - now)
        self.backoff = min(2 * self.backoff, self.backoff_max)
        return wait


def _jitter(d: float) -> float:
    """d spread over [d/2, d), so a fleet of keepers that lost the server at
    once do not come back at once."""
    return d / 2 + random.random() * d / 2


def _transient(err: BaseException) -> bool:
    """Whether a renewal's error is worth retrying: no answer, 408, 429, 5xx,
    or an answer that could not be read (a proxy's page with a 200)."""
    if isinstance(err, ProblemError):
        return err.retryable
    return True


def _lost(node_id: str, err: BaseException) -> LeaseLost:
    """The LeaseLost a renewal error means: the server's lease_lost itself,
    or one made from another final answer."""
    if isinstance(err, LeaseLost):
        return err
    lost = LeaseLost(f"lease lost: node {node_id}: {err}", holder=getattr(err, "holder", None))
    lost.code = getattr(err, "code", "") or ""
    lost.__cause__ = err
    return lost


def _fenced(body: Optional[Dict[str, Any]], fence: int, session: Optional[str]) -> Dict[str, Any]:
    out: Dict[str, Any] = dict(body or {})
    out.setdefault("fence", fence)
    if session is not None:
        out.setdefault("session", session)
    return out


def _failure(exc: BaseException) -> FailRequest:
    text = f"{type(exc).__name__}: {exc}"
    return {"error": text[:_MAX_ERROR]}


def _unpack(lease: Union[Lease, ClaimResponse]) -> Lease:
    inner = lease.get("lease")
    if isinstance(inner, dict):
        return inner  # type: ignore[return-value]
    return lease  # type: ignore[return-value]


class _KeeperBase:
    def __init__(
        self,
        lease: Union[Lease, ClaimResponse],
        *,
        interval: Optional[float] = None,
        backoff: Tuple[float, float] = (0.2, 5.0),
        on_renew: Optional[Callable[[RenewResponse], None]] = None,
        on_lost: Optional[Callable[[LeaseLost], None]] = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        first = _unpack(lease)
        self.node_id: str = first["node_id"]
        self.fence: int = first["fence"]
        self.session: Optional[str] = first.get("session")
        #: The lease as last renewed.
        self.lease: Lease = first
        #: Why the lease was lost; None while it is held.
        self.cause: Optional[LeaseLost] = None
        #: The last renewal's error: None after a success, the transient
        #: error of a renewal being retried, or the LeaseLost.
        self.last_error: Optional[BaseException] = None
        self._plan = _Plan(first, interval, backoff, clock)
        self._on_renew = on_renew
        self._on_lost = on_lost
        # Called with each planned wait before it starts: a signal for tests.
        self._on_wait: Optional[Callable[[float], None]] = None
        self._ended = False

    def check(self) -> None:
        """Raise the LeaseLost if the lease was lost."""
        if self.cause is not None:
            raise self.cause

    def _renew_body(self) -> Dict[str, Any]:
        return _fenced(None, self.fence, self.session)

    def _succeeded(self, sent: float, res: RenewResponse) -> float:
        self.last_error = None
        self.lease = res["lease"]
        wait = self._plan.renewed(sent, res["lease"])
        if self._on_renew is not None:
            try:
                self._on_renew(res)
            except Exception:  # a broken callback must not stop the renewals
                log.exception("tether_client: on_renew of node %s raised", self.node_id)
        return wait

    def _failed(self, err: BaseException) -> Optional[float]:
        """The wait before a retry, or None when the lease is lost (cause set)."""
        self.last_error = err
        if _transient(err):
            wait = self._plan.retry_wait(err)
            if wait is not None:
                return wait
            lost: LeaseLost = LeaseExpired(
                f"lease lost: node {self.node_id}: expired without a successful renewal: {err}"
            )
            lost.__cause__ = err
        else:
            lost = _lost(self.node_id, err)
        self._lose(lost)
        return None

    def _lose(self, lost: LeaseLost) -> None:
        self.cause = lost
        self.last_error = lost
        self._signal_lost()
        if self._on_lost is not None:
            try:
                self._on_lost(lost)
            except Exception:
                log.exception("tether_client: on_lost of node %s raised", self.node_id)

    def _signal_lost(self) -> None:
        raise NotImplementedError


class LeaseKeeper(_KeeperBase):
    """Keeps a lease from a thread. Make one with ``Client.keep(claim)``::

        with tether.keep(claim) as lease:
            work(lease)                       # lease.lost.is_set() if it was lost
            lease.complete({"result": {"ok": True}})

    ``interval`` renews that often instead of every third of the TTL;
    ``backoff`` is the least and the most delay between retries of a
    transient failure; ``on_renew`` and ``on_lost`` are called from the
    keeper's thread and must return quickly (an exception they raise is
    logged to the ``tether_client`` logger); ``clock`` is the monotonic clock
    the schedule is reckoned on.
    """

    def __init__(self, client: "Client", lease: Union[Lease, ClaimResponse], **options: Any) -> None:
        super().__init__(lease, **options)
        self._client = client
        self.lost = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"tether-keeper-{self.node_id}", daemon=True)
        self._lock = threading.Lock()

    def _signal_lost(self) -> None:
        self.lost.set()

    def start(self) -> "LeaseKeeper":
        with self._lock:
            if not self._thread.is_alive() and not self._stopping.is_set() and self._thread.ident is None:
                self._thread.start()
        return self

    def stop(self) -> Optional[BaseException]:
        """Stop renewing and wait for an in-flight renewal to end. Returns
        the last error: None when the last renewal succeeded (or none was due
        yet), the LeaseLost when the lease was lost, or else the transient
        error of the last renewal (the lease may still be live until its
        expiry). Safe to call more than once."""
        self._stopping.set()
        if self._thread.ident is not None and self._thread is not threading.current_thread():
            self._thread.join()
        return self.last_error

    def complete(self, body: Optional[CompleteRequest] = None) -> CompleteResponse:
        """Stop renewing and complete the node with this lease's fence."""
        self.stop()
        self._ended = True
        return self._client.complete_node(self.node_id, _fenced(body, self.fence, self.session))  # type: ignore[arg-type]

    def fail(self, body: FailRequest) -> NodeAnswer:
        """Stop renewing and fail the run (retried while attempts remain,
        unless ``requeue`` is false)."""
        self.stop()
        self._ended = True
        return self._client.fail_node(self.node_id, _fenced(body, self.fence, self.session))  # type: ignore[arg-type]

    def release(self, body: Optional[ReleaseRequest] = None) -> ReleaseResponse:
        """Stop renewing and give the node back (the attempt is not spent)."""
        self.stop()
        self._ended = True
        return self._client.release_node(self.node_id, _fenced(body, self.fence, self.session))  # type: ignore[arg-type]

    def progress(self, body: ProgressRequest) -> ProgressResponse:
        """Report progress under this lease; the keeper keeps renewing."""
        return self._client.report_progress(self.node_id, _fenced(body, self.fence, self.session))  # type: ignore[arg-type]

    def __enter__(self) -> "LeaseKeeper":
        return self.start()

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        self.stop()
        if exc is not None and not self._ended and self.cause is None and isinstance(exc, Exception):
            try:
                self.fail(_failure(exc))
            except (ProblemError, httpx.TransportError):
                pass  # the block's own exception is the one to see

    def _run(self) -> None:
        if self._plan.ttl <= 0 or self._plan.deadline <= self._plan.clock():
            self._lose(LeaseLost(f"lease lost: node {self.node_id}: the lease had expired before it was kept"))
            return
        wait = self._plan.first_wait()
        while True:
            if self._on_wait is not None:
                self._on_wait(wait)
            if self._stopping.wait(wait):
                return
            sent = self._plan.clock()
            try:
                res = self._client.with_timeout(self._plan.request_timeout(sent)).renew_lease(
                    self.node_id, self._renew_body()  # type: ignore[arg-type]
                )
            except Exception as err:  # noqa: BLE001 - every failure is transient or final, see _failed
                if self._stopping.is_set():
                    return
                next_wait = self._failed(err)
                if next_wait is None:
                    return
                wait = next_wait
                continue
            if self._stopping.is_set():
                return
            wait = self._succeeded(sent, res)


class AsyncLeaseKeeper(_KeeperBase):
    """Keeps a lease from an asyncio task. Make one with
    ``AsyncClient.keep(claim)``::

        async with tether.keep(claim) as lease:
            await work(lease)                 # lease.lost.is_set() if it was lost
            await lease.complete({"result": {"ok": True}})

    The options are LeaseKeeper's; ``on_renew`` and ``on_lost`` are called
    from the keeper's task.
    """

    def __init__(self, client: "AsyncClient", lease: Union[Lease, ClaimResponse], **options: Any) -> None:
        super().__init__(lease, **options)
        self._client = client
        self.lost = asyncio.Event()
        self._task: Optional["asyncio.Task[None]"] = None
        self._stopped = False

    def _signal_lost(self) -> None:
        self.lost.set()

    def start(self) -> "AsyncLeaseKeeper":
        """Start renewing (in a task of the running loop)."""
        if self._task is None and not self._stopped:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"tether-keeper-{self.node_id}")
        return self

    async def stop(self) -> Optional[BaseException]:
        """Stop renewing, cancelling an in-flight renewal; returns the last
        error as LeaseKeeper.stop does."""
        self._stopped = True
        task = self._task
        if task is not None:
            task.cancel()
            # wait() neither raises the keeper's CancelledError nor hides our
            # own caller's cancellation.
            await asyncio.wait([task])
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]
        return self.last_error

    async def complete(self, body: Optional[CompleteRequest] = None) -> CompleteResponse:
        await self.stop()
        self._ended = True
        return await self._client.complete_node(self.node_id, _fenced(body, self.fence, self.session))  # type: ignore[arg-type]

    async def fail(self, body: FailRequest) -> NodeAnswer:
        await self.stop()
        self._ended = True
        return await self._client.fail_node(self.node_id, _fenced(body, self.fence, self.session))  # type: ignore[arg-type]

    async def release(self, body: Optional[ReleaseRequest] = None) -> ReleaseResponse:
        await self.stop()
        self._ended = True
        return await self._client.release_node(self.node_id, _fenced(body, self.fence, self.session))  # type: ignore[arg-type]

    async def progress(self, body: ProgressRequest) -> ProgressResponse:
        return await self._client.report_progress(self.node_id, _fenced(body, self.fence, self.session))  # type: ignore[arg-type]

    async def __aenter__(self) -> "AsyncLeaseKeeper":
        return self.start()

    async def __aexit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        await self.stop()
        if exc is not None and not self._ended and self.cause is None and isinstance(exc, Exception):
            try:
                await self.fail(_failure(exc))
            except (ProblemError, httpx.TransportError):
                pass

    async def _run(self) -> None:
        if self._plan.ttl <= 0 or self._plan.deadline <= self._plan.clock():
            self._lose(LeaseLost(f"lease lost: node {self.node_id}: the lease had expired before it was kept"))
            return
        wait = self._plan.first_wait()
        while True:
            if self._on_wait is not None:
                self._on_wait(wait)
            await asyncio.sleep(wait)
            sent = self._plan.clock()
            try:
                res = await self._client.with_timeout(self._plan.request_timeout(sent)).renew_lease(
                    self.node_id, self._renew_body()  # type: ignore[arg-type]
                )
            except Exception as err:  # noqa: BLE001 - every failure is transient or final, see _failed
                next_wait = self._failed(err)
                if next_wait is None:
                    return
                wait = next_wait
                continue
            wait = self._succeeded(sent, res)
