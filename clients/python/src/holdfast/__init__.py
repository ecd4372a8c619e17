"""Python client for holdfastd: expiring holds on scarce resources.

    from holdfast import Client, HeldByAnother

    with Client() as client:
        with client.hold("seat", "run-2026-12-01-KTX101", ["E7", "E8", "E9"], ttl_ms=60_000) as h:
            ...
            h.confirm("order-4711:confirm")

        client.set_capacity("ga", "show-2026-12-24", "adult", 5000)   # pools (docs/pools.md)
        with client.hold_units("ga", "show-2026-12-24", {"adult": 2, "child": 1}) as h:
            h.confirm("order-4712:confirm", reference="order-4712")
"""

from ._model import (DEFAULT_SOCKET, DEFAULT_TIMEOUT, SOCKET_ENV, Capacities, Claim,
                     CancelResult, ConfirmResult, Health, PoolCancelResult, PoolCapacity,
                     PoolConfirmResult, PoolStatus, ResourceState, ResourceStatus, Segment,
                     new_correlation_id)
from .aio import AsyncClient, AsyncHold, AsyncPoolHold
from .client import Client, Hold, PoolHold
from .errors import (RETRYABLE_CODES, ClientClosed, Code, Confirmed, Conflict, DeadlineExceeded,
                     FailedPrecondition, HeldByAnother, HoldfastError, HoldLost,
                     IdempotencyMismatch, Internal, InvalidArgument, NotFound, NotHeld,
                     PermissionDenied, ProtocolError, ResourceExhausted, Stale, Unavailable,
                     Unimplemented, code_name)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_SOCKET", "DEFAULT_TIMEOUT", "RETRYABLE_CODES", "SOCKET_ENV",
    "AsyncClient", "AsyncHold", "AsyncPoolHold", "Capacities", "CancelResult", "Claim", "Client",
    "ClientClosed", "Code", "ConfirmResult", "Confirmed", "Conflict", "DeadlineExceeded",
    "FailedPrecondition", "Health", "HeldByAnother", "Hold", "HoldLost", "HoldfastError",
    "IdempotencyMismatch", "Internal", "InvalidArgument", "NotFound", "NotHeld",
    "PermissionDenied", "PoolCancelResult", "PoolCapacity", "PoolConfirmResult", "PoolHold",
    "PoolStatus", "ProtocolError", "ResourceExhausted", "ResourceState", "ResourceStatus",
    "Segment", "Stale", "Unavailable", "Unimplemented", "code_name", "new_correlation_id",
]
