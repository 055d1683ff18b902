"""The sync and async clients: the generated operations (_operations.py) over
an httpx client, with the bearer token and problem+json errors."""

from __future__ import annotations

import asyncio
import copy
import time
from typing import Any, Dict, Mapping, Optional, Union

import httpx

from . import _retry, _transport
from ._operations import AsyncOperations, SyncOperations
from .keeper import AsyncLeaseKeeper, LeaseKeeper
from ._retry import RetryPolicy
from .models import ClaimResponse, Lease

__all__ = ["Client", "AsyncClient"]

DEFAULT_TIMEOUT = 30.0


class Client(SyncOperations):
    """A Tether client. Every API operation is a method named after its
    operationId in snake_case (``claim_next``, ``complete_node``, ...).

    ``base_url`` is the server's address, ``token`` a bearer token (a JWT or
    an API key). Pass ``http_client`` to bring your own httpx.Client (its
    base URL is not used; you close it); otherwise the client makes one and
    ``close()`` (or ``with``) closes it. Safe to share between threads.

    ``retry`` is the RetryPolicy of calls that failed for a reason that may
    pass (a 429, a 503, a connection error), for the calls it is safe to
    repeat (see the README's table); ``retry=None`` turns retries off.
    """

    def __init__(
        self,
        base_url: str,
        token: Optional[str] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        http_client: Optional[httpx.Client] = None,
        transport: Optional[httpx.BaseTransport] = None,
        retry: Optional[RetryPolicy] = RetryPolicy(),
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self._owned = http_client is None
        self._http = http_client or httpx.Client(timeout=timeout, transport=transport)
        self._timeout_override: Optional[float] = None
        self.retry = retry

    def close(self) -> None:
        if self._owned:
            self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def with_timeout(self, seconds: float) -> "Client":
        """A client sharing this one's connections whose requests time out
        after seconds."""
        c = copy.copy(self)
        c._owned = False
        c._timeout_override = seconds
        return c

    def keep(self, lease: Union[Lease, ClaimResponse], **options: Any) -> LeaseKeeper:
        """A LeaseKeeper for a lease (or a claim's answer), started: use it
        as a context manager. See LeaseKeeper for the options."""
        return LeaseKeeper(self, lease, **options).start()

    def _call(
        self,
        method: str,
        path: str,
        *,
        path_params: Optional[Mapping[str, str]] = None,
        query: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, Any]] = None,
        json: Any = None,
        content: Optional[bytes] = None,
        content_type: Optional[str] = None,
        accept: Optional[str] = None,
        result: str = "json",
        long_poll_ms: Optional[int] = None,
    ) -> Any:
        method, url, params, hdrs, body = _transport.build(
            self.base_url, self.token, method, path,
            path_params=path_params, query=query, headers=headers,
            json=json, content=content, content_type=content_type, accept=accept,
        )
        timeout = _transport.timeout_for(self._http.timeout, long_poll_ms, self._timeout_override)
        attempts = _attempts(self.retry, method, path, json, hdrs)
        while True:
            try:
                response = self._http.request(method, url, params=params, headers=hdrs, content=body, timeout=timeout)
            except httpx.TransportError as e:
                wait = attempts.after_error(e)
                if wait is None:
                    raise
                time.sleep(wait)
                continue
            wait = attempts.after_response(response)
            if wait is None:
                return _transport.read(response, result)
            response.close()
            time.sleep(wait)


class AsyncClient(AsyncOperations):
    """The asyncio twin of Client: the same methods, each a coroutine."""

    def __init__(
        self,
        base_url: str,
        token: Optional[str] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        http_client: Optional[httpx.AsyncClient] = None,
        transport: Optional[httpx.AsyncBaseTransport] = None,
        retry: Optional[RetryPolicy] = RetryPolicy(),
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self._owned = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=timeout, transport=transport)
        self._timeout_override: Optional[float] = None
        self.retry = retry

    async def aclose(self) -> None:
        if self._owned:
            await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def with_timeout(self, seconds: float) -> "AsyncClient":
        """A client sharing this one's connections whose requests time out
        after seconds."""
        c = copy.copy(self)
        c._owned = False
        c._timeout_override = seconds
        return c

    def keep(self, lease: Union[Lease, ClaimResponse], **options: Any) -> AsyncLeaseKeeper:
        """An AsyncLeaseKeeper for a lease (or a claim's answer), started in
        the running loop: use it as ``async with``. See LeaseKeeper for the
        options."""
        return AsyncLeaseKeeper(self, lease, **options).start()

    async def _call(
        self,
        method: str,
        path: str,
        *,
        path_params: Optional[Mapping[str, str]] = None,
        query: Optional[Mapping[str, Any]] = None,
        headers: Optional[Mapping[str, Any]] = None,
        json: Any = None,
        content: Optional[bytes] = None,
        content_type: Optional[str] = None,
        accept: Optional[str] = None,
        result: str = "json",
        long_poll_ms: Optional[int] = None,
    ) -> Any:
        method, url, params, hdrs, body = _transport.build(
            self.base_url, self.token, method, path,
            path_params=path_params, query=query, headers=headers,
            json=json, content=content, content_type=content_type, accept=accept,
        )
        timeout = _transport.timeout_for(self._http.timeout, long_poll_ms, self._timeout_override)
        attempts = _attempts(self.retry, method, path, json, hdrs)
        while True:
            try:
                response = await self._http.request(method, url, params=params, headers=hdrs, content=body, timeout=timeout)
            except httpx.TransportError as e:
                wait = attempts.after_error(e)
                if wait is None:
                    raise
                await asyncio.sleep(wait)
                continue
            wait = attempts.after_response(response)
            if wait is None:
                return _transport.read(response, result)
            await response.aclose()
            await asyncio.sleep(wait)


def _attempts(policy: Optional[RetryPolicy], method: str, path: str, json: Any, hdrs: Dict[str, str]) -> _retry.Attempts:
    """The tries of one call; gives a create or a claim-next its Idempotency-Key (in hdrs)
    when retries are on and the caller gave none."""
    kind = _retry.kind_of(method, path, json)
    if policy is not None and policy.max_attempts > 1 and kind == _retry.KEYED_CREATE and "Idempotency-Key" not in hdrs:
        hdrs["Idempotency-Key"] = _retry.new_idempotency_key()
    return _retry.Attempts(policy, kind)
