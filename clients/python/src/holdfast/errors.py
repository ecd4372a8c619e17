"""Result codes and the exceptions that carry them."""

from __future__ import annotations

import enum
from typing import Any, Dict, FrozenSet, Optional, Type


class Code(enum.IntEnum):
    """holdfast.v1.Code without the CODE_ prefix (values match the wire).

    Prints as its name, e.g. ``str(Code.NOT_FOUND) == "NOT_FOUND"`` (the
    client contract, protos/contract/client-contract.md); ``int(code)`` is the
    wire value.
    """

    UNSPECIFIED = 0
    OK = 1
    HELD_BY_ANOTHER = 2
    NOT_HELD = 3
    CONFIRMED = 4
    INVALID_ARGUMENT = 5
    UNAVAILABLE = 6
    DEADLINE_EXCEEDED = 7
    RESOURCE_EXHAUSTED = 8
    PERMISSION_DENIED = 9
    CONFLICT = 10
    HOLD_LOST = 11
    STALE = 12
    IDEMPOTENCY_MISMATCH = 13
    NOT_FOUND = 14
    UNIMPLEMENTED = 15
    INTERNAL = 16
    FAILED_PRECONDITION = 17

    def __str__(self) -> str:
        return self.name

    def __format__(self, spec: str) -> str:
        return format(self.name, spec)


# Codes where sending the same call again (after a wait, with a bounded number
# of attempts) may succeed; a Confirm or Cancel only with the same idempotency
# key. See protos/contract/client-contract.md for why these three.
RETRYABLE_CODES: FrozenSet[Code] = frozenset(
    {Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED, Code.RESOURCE_EXHAUSTED})


def code_name(code: "Code | int") -> str:
    """"NOT_FOUND" for Code.NOT_FOUND (or 14); "CODE_99" for a value this client does not know."""
    try:
        return Code(int(code)).name
    except ValueError:
        return f"CODE_{int(code)}"


def _code(value: int) -> "Code | int":
    # A newer daemon may send a code this client does not know yet.
    try:
        return Code(value)
    except ValueError:
        return value


class HoldfastError(Exception):
    """A call did not succeed. `code` says why; the message never holds a token.

    `field` and `resource_id` come from the daemon's ErrorDetail, `result` is
    the response's result message when the daemon sent one (e.g. how many ids a
    partial Release did delete), `correlation_id` is the request's trace id.
    """

    code: "Code | int" = Code.UNSPECIFIED

    def __init__(
        self,
        message: str,
        *,
        code: "Code | int | None" = None,
        field: str = "",
        resource_id: str = "",
        correlation_id: str = "",
        result: Any = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = _code(int(code))
        self.message = message
        self.field = field
        self.resource_id = resource_id
        self.correlation_id = correlation_id
        self.result = result

    @property
    def code_name(self) -> str:
        """The code as printed: "HELD_BY_ANOTHER", or "CODE_99" for an unknown one."""
        return code_name(self.code)

    @property
    def retryable(self) -> bool:
        """True for UNAVAILABLE, DEADLINE_EXCEEDED and RESOURCE_EXHAUSTED: the same
        call may succeed when sent again after a wait. Retry a confirm or cancel
        only with the same idempotency key. False for a closed client
        (FAILED_PRECONDITION) and for codes this client does not know."""
        return self.code in RETRYABLE_CODES

    def __str__(self) -> str:
        name = self.code_name
        parts = [f"{name}: {self.message}" if self.message else name]
        extra = []
        if self.field:
            extra.append(f"field={self.field}")
        if self.resource_id:
            extra.append(f"resource_id={self.resource_id}")
        if self.correlation_id:
            extra.append(f"correlation_id={self.correlation_id}")
        if extra:
            parts.append(f"({', '.join(extra)})")
        return " ".join(parts)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


class HeldByAnother(HoldfastError):
    code = Code.HELD_BY_ANOTHER


class NotHeld(HoldfastError):
    code = Code.NOT_HELD


class Confirmed(HoldfastError):
    code = Code.CONFIRMED


class InvalidArgument(HoldfastError):
    code = Code.INVALID_ARGUMENT


class Unavailable(HoldfastError):
    """Redis/PostgreSQL/daemon unreachable, or the outcome is unknown.

    Safe to retry; retry a Confirm with the same idempotency key.
    """

    code = Code.UNAVAILABLE


class DeadlineExceeded(HoldfastError):
    """The call's deadline passed (reported by the daemon or enforced locally)."""

    code = Code.DEADLINE_EXCEEDED


class ResourceExhausted(HoldfastError):
    code = Code.RESOURCE_EXHAUSTED


class PermissionDenied(HoldfastError):
    code = Code.PERMISSION_DENIED


class Conflict(HoldfastError):
    code = Code.CONFLICT


class HoldLost(HoldfastError):
    code = Code.HOLD_LOST


class Stale(HoldfastError):
    code = Code.STALE


class IdempotencyMismatch(HoldfastError):
    code = Code.IDEMPOTENCY_MISMATCH


class NotFound(HoldfastError):
    code = Code.NOT_FOUND


class Unimplemented(HoldfastError):
    code = Code.UNIMPLEMENTED


class Internal(HoldfastError):
    code = Code.INTERNAL


class FailedPrecondition(HoldfastError):
    code = Code.FAILED_PRECONDITION


class ClientClosed(FailedPrecondition):
    """The client was closed; create a new one."""


class ProtocolError(Unavailable):
    """The daemon sent bytes this client cannot decode; the connection is dropped."""


_BY_CODE: Dict[int, Type[HoldfastError]] = {
    cls.code: cls
    for cls in (
        HeldByAnother, NotHeld, Confirmed, InvalidArgument, Unavailable,
        DeadlineExceeded, ResourceExhausted, PermissionDenied, Conflict,
        HoldLost, Stale, IdempotencyMismatch, NotFound, Unimplemented,
        Internal, FailedPrecondition,
    )
}


def error_for(
    code: int,
    message: str,
    *,
    field: str = "",
    resource_id: str = "",
    correlation_id: str = "",
    result: Optional[Any] = None,
) -> HoldfastError:
    """The exception class for a wire code (HoldfastError for unknown codes)."""
    cls = _BY_CODE.get(code, HoldfastError)
    return cls(
        message or "",
        code=code,
        field=field,
        resource_id=resource_id,
        correlation_id=correlation_id,
        result=result,
    )
