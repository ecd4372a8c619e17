"""Python client for holdfastd: expiring holds on scarce resources.

    from holdfast import Client, HeldByAnother

    with Client() as client:
        with client.hold("seat", "run-2026-12-01-KTX101", ["E7", "E8", "E9"], ttl_ms=60_000) as h:
            ...
            h.confirm(idempotency_key="order-4711")
"""

from ._model import (Claim, CancelResult, ConfirmResult, Health, ResourceState, ResourceStatus,
                     new_correlation_id)
from .aio import AsyncClient, AsyncHold
from .client import Client, Hold
from .errors import (ClientClosed, Code, Confirmed, Conflict, DeadlineExceeded, FailedPrecondition,
                     HeldByAnother, HoldfastError, HoldLost, IdempotencyMismatch, Internal,
                     InvalidArgument, NotFound, NotHeld, PermissionDenied, ProtocolError,
                     ResourceExhausted, Stale, Unavailable, Unimplemented)

__version__ = "0.1.0"

__all__ = [
    "AsyncClient", "AsyncHold", "CancelResult", "Claim", "Client", "ClientClosed", "Code",
    "ConfirmResult", "Confirmed", "Conflict", "DeadlineExceeded", "FailedPrecondition", "Health",
    "HeldByAnother", "Hold", "HoldLost", "HoldfastError", "IdempotencyMismatch", "Internal",
    "InvalidArgument", "NotFound", "NotHeld", "PermissionDenied", "ProtocolError",
    "ResourceExhausted", "ResourceState", "ResourceStatus", "Stale", "Unavailable",
    "Unimplemented", "new_correlation_id",
]
