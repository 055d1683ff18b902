"""A typed Python client for the Tether HTTP API, sync and async, over httpx.

The operations and models are generated from openapi.yaml
(_operations.py, models.py: ``make generate``); the transport, the
problem+json exceptions, the retries (_retry.py) and the lease keepers are
written by hand.

Invariants: nothing in models.py or _operations.py is edited by hand; every
operation of the spec is a method of both Client and AsyncClient; every
answer of 400 or above raises a ProblemError whose class is its code's family.
"""

from . import models
from ._operations import OPERATIONS
from ._retry import RetryPolicy
from .client import AsyncClient, Client
from .errors import (
    AuthError,
    BadRequestError,
    ConflictError,
    LeaseExpired,
    LeaseLost,
    LeaseLostError,
    NotFoundError,
    ProblemError,
    TetherError,
    TransientError,
)
from .keeper import AsyncLeaseKeeper, LeaseKeeper

__version__ = "1.0.0"

__all__ = [
    "AsyncClient",
    "AsyncLeaseKeeper",
    "AuthError",
    "BadRequestError",
    "Client",
    "ConflictError",
    "LeaseExpired",
    "LeaseKeeper",
    "LeaseLost",
    "LeaseLostError",
    "NotFoundError",
    "OPERATIONS",
    "ProblemError",
    "RetryPolicy",
    "TetherError",
    "TransientError",
    "models",
]
