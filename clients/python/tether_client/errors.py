"""Exceptions: a problem+json answer of the server, and a lost lease.

Every answer of 400 or above raises a ProblemError carrying the problem
document's members (``code``, ``holder``, ``status``, ``type``, ``title``,
``detail`` and the rest). Its class is that of the code's family, so callers
catch what they can act on::

    try:
        tether.claim_node("task-1")
    except ConflictError as e:          # conflict, not_claimable, ...
        print(e.code, e.holder, e.expires_at)

A transport failure (no answer at all) is httpx's own exception
(``httpx.TransportError`` and its subclasses), not one of these.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Type

import httpx

__all__ = [
    "TetherError",
    "ProblemError",
    "BadRequestError",
    "AuthError",
    "NotFoundError",
    "ConflictError",
    "LeaseLost",
    "LeaseLostError",
    "LeaseExpired",
    "TransientError",
    "problem_from_response",
]


class TetherError(Exception):
    """Base of every exception this package raises."""


class LeaseLost(TetherError):
    """The lease is gone: it lapsed, was taken, or its node ended.

    A LeaseKeeper signals loss with one (see LeaseKeeper.cause). The server's
    own ``lease_lost`` answer is a LeaseLostError, which is one too, so
    ``except LeaseLost`` catches both. ``holder`` is the lease's current holder
    when the server named one.
    """

    holder: Optional[str] = None
    #: The problem code behind the loss ("lease_lost", "not_found", ...), or "".
    code: str = ""

    def __init__(self, message: str, *, holder: Optional[str] = None) -> None:
        super().__init__(message)
        self.holder = holder


class LeaseExpired(LeaseLost):
    """A keeper could not renew before the lease's expiry (the server did not
    answer, or answered with a transient error, until then). ``__cause__`` is
    the last renewal's error."""


class ProblemError(TetherError):
    """An RFC 9457 problem document the server answered with (status >= 400).

    ``code`` is stable and is what callers switch on; ``problem`` is the whole
    document as a dict. Members a code does not carry are None.
    """

    def __init__(self, problem: Dict[str, Any], *, retry_after: Optional[float] = None) -> None:
        self.problem: Dict[str, Any] = problem
        self.status: int = int(problem.get("status") or 0)
        self.type: str = problem.get("type") or "about:blank"
        self.title: str = problem.get("title") or ""
        self.code: str = problem.get("code") or ""
        self.detail: Optional[str] = problem.get("detail")
        #: ``conflict``, ``lease_lost``: the current lease holder (None when none).
        self.holder: Optional[str] = problem.get("holder")
        #: ``conflict``: the holder's expiry, epoch ms and RFC 3339.
        self.expires: Optional[int] = problem.get("expires")
        self.expires_at: Optional[str] = problem.get("expires_at")
        #: ``not_claimable``: ``terminal``, ``blocked`` or ``delayed``.
        self.reason: Optional[str] = problem.get("reason")
        self.blocked_by: Optional[List[str]] = problem.get("blocked_by")
        self.run_at: Optional[str] = problem.get("run_at")
        #: ``bad_request``: the offending input.
        self.field: Optional[str] = problem.get("field")
        self.current_version: Optional[int] = problem.get("current_version")
        self.limit: Optional[int] = problem.get("limit")
        self.oldest_seq: Optional[int] = problem.get("oldest_seq")
        self.request_id: Optional[str] = problem.get("request_id")
        #: The Retry-After header in seconds, when the server sent one.
        self.retry_after: Optional[float] = retry_after
        # Not super(): in LeaseLostError the next class is LeaseLost, whose
        # __init__ would reset holder.
        Exception.__init__(self, str(self))

    def __str__(self) -> str:
        return f"{self.status} {self.code or 'error'}: {self.detail or self.title}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.problem!r})"

    @property
    def retryable(self) -> bool:
        """True when the same request may succeed later (408, 429, 5xx)."""
        return self.status in (408, 429) or self.status >= 500


class BadRequestError(ProblemError):
    """The request itself is wrong; sending it again cannot succeed:
    bad_request, payload_too_large, unsupported_media_type,
    idempotency_mismatch, range_not_satisfiable."""


class AuthError(ProblemError):
    """unauthorized (no or a bad token) or forbidden (the role is too low)."""


class NotFoundError(ProblemError):
    """not_found, or gone (events older than the oldest kept: ``oldest_seq``)."""


class ConflictError(ProblemError):
    """The state is in the way: conflict (another holder, with ``holder`` and
    ``expires_at``), not_claimable (``reason``), already_exists, cycle,
    precondition_failed (``current_version``)."""


class LeaseLostError(ConflictError, LeaseLost):
    """lease_lost: the lease lapsed, was taken (``holder``), or the fence is stale."""


class TransientError(ProblemError):
    """rate_limited, unavailable, disk_full, internal, or any 408/429/5xx: retry later
    (``retry_after`` says when, if the server did)."""


_FAMILIES: Dict[str, Type[ProblemError]] = {
    "bad_request": BadRequestError,
    "payload_too_large": BadRequestError,
    "unsupported_media_type": BadRequestError,
    "idempotency_mismatch": BadRequestError,
    "range_not_satisfiable": BadRequestError,
    "unauthorized": AuthError,
    "forbidden": AuthError,
    "not_found": NotFoundError,
    "gone": NotFoundError,
    "conflict": ConflictError,
    "not_claimable": ConflictError,
    "already_exists": ConflictError,
    "cycle": ConflictError,
    "precondition_failed": ConflictError,
    "lease_lost": LeaseLostError,
    "rate_limited": TransientError,
    "unavailable": TransientError,
    "internal": TransientError,
}


def problem_class(code: str, status: int) -> Type[ProblemError]:
    """The exception class of a problem code; by status for a code this
    client does not know."""
    cls = _FAMILIES.get(code)
    if cls is not None:
        return cls
    if status in (408, 429) or status >= 500:
        return TransientError
    return {401: AuthError, 403: AuthError, 404: NotFoundError, 409: ConflictError, 410: NotFoundError}.get(
        status, BadRequestError if 400 <= status < 500 else ProblemError
    )


def problem_from_response(response: httpx.Response) -> ProblemError:
    """The exception for an answer of 400 or above. A body that is not a
    problem document (a proxy's error page) still gives one, from the status."""
    problem: Optional[Dict[str, Any]] = None
    media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type == "application/problem+json":
        try:
            decoded = json.loads(response.content)
            if isinstance(decoded, dict):
                problem = decoded
        except ValueError:
            pass
    if problem is None:
        problem = {
            "title": response.reason_phrase,
            "status": response.status_code,
            "detail": "the response is not a problem document",
        }
    problem.setdefault("status", response.status_code)
    retry_after: Optional[float] = None
    try:
        retry_after = float(response.headers["retry-after"])
    except (KeyError, ValueError):
        pass
    cls = problem_class(str(problem.get("code") or ""), int(problem["status"]))
    return cls(problem, retry_after=retry_after)
