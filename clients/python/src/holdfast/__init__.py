"""Python client for holdfastd: expiring holds on scarce resources.

    from holdfast import Client, Seats, Units

    with Client() as client:
        with client.hold("seat", "run-2026-12-01-KTX101", Seats(["E7", "E8", "E9"]),
                         ttl_ms=60_000) as h:
            ...
            h.confirm("order-4711:confirm")

        client.admin.set_capacity("ga", "show-2026-12-24", "adult", 5000)  # pools (docs/pools.md)
        with client.hold("ga", "show-2026-12-24", Units({"adult": 2, "child": 1})) as h:
            h.confirm("order-4712:confirm", reference="order-4712")

Every call takes a target, Seats(ids, segment=None) or Units({pool: count})
(a plain list of ids means Seats); the names are those of
protos/contract/surface.json.
"""

from typing import Any

from . import _deprecated
from ._model import (DEFAULT_SOCKET, DEFAULT_TIMEOUT, SOCKET_ENV, Capacities, CancelResult, Claim,
                     ConfirmResult, Health, PoolCapacity, PoolStatus, ResourceState,
                     ResourceStatus, StatusResult, new_correlation_id)
from ._targets import Seats, Segment, Target, Units
from .admin import Admin, AsyncAdmin
from .aio import AsyncClient, AsyncHold
from .client import Client, Hold
from .errors import (RETRYABLE_CODES, ClientClosed, Code, Confirmed, Conflict, DeadlineExceeded,
                     FailedPrecondition, HeldByAnother, HoldfastError, HoldLost,
                     IdempotencyMismatch, Internal, InvalidArgument, NotFound, NotHeld,
                     PermissionDenied, ProtocolError, ResourceExhausted, Stale, Unavailable,
                     Unimplemented, code_name)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_SOCKET", "DEFAULT_TIMEOUT", "RETRYABLE_CODES", "SOCKET_ENV",
    "Admin", "AsyncAdmin", "AsyncClient", "AsyncHold", "Capacities", "CancelResult", "Claim",
    "Client", "ClientClosed", "Code", "ConfirmResult", "Confirmed", "Conflict",
    "DeadlineExceeded", "FailedPrecondition", "Health", "HeldByAnother", "Hold", "HoldLost",
    "HoldfastError", "IdempotencyMismatch", "Internal", "InvalidArgument", "NotFound", "NotHeld",
    "PermissionDenied", "PoolCapacity", "PoolStatus", "ProtocolError", "ResourceExhausted",
    "ResourceState", "ResourceStatus", "Seats", "Segment", "Stale", "StatusResult", "Target",
    "Unavailable", "Unimplemented", "Units", "code_name", "new_correlation_id",
]


def __getattr__(name: str) -> Any:
    # The deprecated type names (PoolHold, ...): warn, then the replacement.
    return _deprecated.type_alias(name, globals())
