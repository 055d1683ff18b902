"""Which failed calls the clients send again, and how long they wait: the
same policy as the Go client's (client/retry.go). No I/O here.

A 429 (the server refused before acting) and a connection never made are
retried for every call. A 503 and a connection lost during the call are
retried only for calls that are safe to repeat: reads, renewals, claims of
a node by id (re-claiming one's own lease renews it), releases that carry
a fence, worker heartbeats, message acknowledgements, and creates and
claims of a queue's next nodes, which the client sends with an
Idempotency-Key of its own making (unless the caller gave one) so that the
server answers a repeat with what the first try did.
"""

from __future__ import annotations

import email.utils
import random
import time
import uuid
from dataclasses import dataclass
from typing import Any, Optional

import httpx

__all__ = ["RetryPolicy", "Attempts", "ONCE", "REPEATABLE", "KEYED_CREATE", "kind_of", "new_idempotency_key"]

ONCE = "once"
REPEATABLE = "repeatable"
# A create or a claim-next: sent with an Idempotency-Key (the name is older
# than keyed claims).
KEYED_CREATE = "keyed_create"

_REPEATABLE_POSTS = {
    "/v1/nodes/{id}/renew",
    "/v1/nodes/{id}/claim",
    "/v1/workers/heartbeat",
    "/v1/inbox/{id}/ack",
}
_KEYED_CREATES = {"/v1/nodes", "/v1/nodes/batch", "/v1/queues/{queue}/claim", "/v1/queues/{queue}/claims"}


@dataclass(frozen=True)
class RetryPolicy:
    """How often a call is tried, and the waits between tries.

    ``max_attempts`` counts the first try (1: no retries). Waits double
    from ``base_delay`` up to ``max_delay`` seconds, each drawn from the
    upper half of its span; the server's Retry-After counts when longer,
    capped at ``max_delay`` too.
    """

    max_attempts: int = 4
    base_delay: float = 0.2
    max_delay: float = 5.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("RetryPolicy: max_attempts must be at least 1, the delays not negative")


def kind_of(method: str, path: str, json: Any) -> str:
    """What a retry may assume of the call to ``path`` (the operation's
    path template, like ``/v1/nodes/{id}/claim``)."""
    if method in ("GET", "HEAD", "OPTIONS"):
        return REPEATABLE
    if method != "POST":
        return ONCE
    if path in _KEYED_CREATES:
        return KEYED_CREATE
    if path in _REPEATABLE_POSTS:
        return REPEATABLE
    if path == "/v1/nodes/{id}/release" and isinstance(json, dict) and json.get("fence") is not None:
        return REPEATABLE
    return ONCE


def new_idempotency_key() -> str:
    return "tether-py-" + uuid.uuid4().hex


class Attempts:
    """The tries of one call: after each failure, the wait before the next
    try, or None when the failure goes to the caller."""

    def __init__(self, policy: Optional[RetryPolicy], kind: str) -> None:
        self.policy = policy or RetryPolicy(max_attempts=1)
        self.repeatable = kind in (REPEATABLE, KEYED_CREATE)
        self.tries = 1
        self.backoff = self.policy.base_delay

    def after_response(self, response: httpx.Response) -> Optional[float]:
        status = response.status_code
        if status == 429 or (status == 503 and self.repeatable):
            return self._next(_retry_after(response))
        return None

    def after_error(self, error: Exception) -> Optional[float]:
        if not isinstance(error, httpx.TransportError):
            return None
        # ConnectError and ConnectTimeout: no connection, nothing was sent.
        if isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout)) or self.repeatable:
            return self._next(0.0)
        return None

    def _next(self, retry_after: float) -> Optional[float]:
        if self.tries >= self.policy.max_attempts:
            return None
        self.tries += 1
        wait = self.backoff / 2 + random.uniform(0, self.backoff / 2)
        self.backoff = min(2 * self.backoff, self.policy.max_delay)
        return max(wait, min(retry_after, self.policy.max_delay))


def _retry_after(response: httpx.Response) -> float:
    """The wait a Retry-After asks for, in seconds: delta seconds or an HTTP
    date; 0 without one."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return 0.0
    if value.isdigit():
        return float(value)
    try:
        at = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return 0.0
    return max(0.0, float(at.timestamp()) - time.time())
