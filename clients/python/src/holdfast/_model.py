"""Result types and the request/response mapping shared by Client and AsyncClient."""

from __future__ import annotations

import enum
import logging
import math
import os
import threading
import uuid
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple, Union

from ._gen import holdfast_pb2 as pb
from ._trace import traceparent_for
from .errors import ClientClosed, Code, HoldfastError, InvalidArgument, Unavailable, error_for

log = logging.getLogger("holdfast")

# Release answers that mean "this token holds none of the ids any more":
# leaving a hold's scope treats them as done (client contract, scope exit).
SCOPE_EXIT_QUIET = frozenset({Code.NOT_HELD, Code.HELD_BY_ANOTHER, Code.CONFIRMED})

# The client contract (protos/contract/client-contract.md, contract.json).
DEFAULT_SOCKET = "/run/holdfast/holdfast.sock"
SOCKET_ENV = "HOLDFAST_SOCKET"
DEFAULT_TIMEOUT = 5.0  # seconds, for calls that give no timeout
_MAX_TIMEOUT_MS = 2**32 - 1

# Waits between connection attempts while the daemon is away (seconds).
RECONNECT_INITIAL = 0.020
RECONNECT_MULTIPLIER = 2
RECONNECT_MAX = 0.500
RECONNECT_JITTER = 0.2


def resolve_socket(path: Optional[str]) -> str:
    """The explicit path, else $HOLDFAST_SOCKET, else the default (empty counts as unset)."""
    return path or os.environ.get(SOCKET_ENV) or DEFAULT_SOCKET


def reconnect_delay(attempt: int, u: float) -> float:
    """Seconds to wait before connection attempt `attempt` + 1 (0-based), for
    a uniform random `u` in [0, 1): the nominal wait shortened by the jitter."""
    nominal = min(RECONNECT_MAX, RECONNECT_INITIAL * RECONNECT_MULTIPLIER ** min(attempt, 64))
    return nominal * (1 - RECONNECT_JITTER * u)


_MAX_UINT32 = 2**32 - 1


@dataclass(frozen=True)
class Segment:
    """A trip along a line of stops (journey segments, docs/segments.md):
    legs `from_stop` .. `to_stop` - 1, leg k running from stop k to stop k+1.

    In a namespace with `max_legs > 0` every request names one, and answers
    name each leg as "<id>@<leg>" (`"E7@1"`). A `(from_stop, to_stop)` tuple
    works wherever a Segment does."""

    from_stop: int
    to_stop: int

    def __post_init__(self) -> None:
        for name in ("from_stop", "to_stop"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"Segment.{name} must be an int, got {v!r}")
            if not 0 <= v <= _MAX_UINT32:
                raise ValueError(f"Segment.{name} must be a stop number >= 0, got {v}")

    def legs(self) -> range:
        """The legs of the trip: from_stop .. to_stop - 1."""
        return range(self.from_stop, self.to_stop)

    def resource_ids(self, ids: Iterable[str]) -> List[str]:
        """The per-leg names the daemon answers with: ["E7@0", "E7@1", ...]."""
        return [f"{i}@{leg}" for i in check_ids(ids) for leg in self.legs()]


SegmentLike = Union[Segment, Tuple[int, int]]


def as_segment(segment: Optional[SegmentLike]) -> Optional[Segment]:
    """None, a Segment, or a (from_stop, to_stop) pair -> Optional[Segment]."""
    if segment is None or isinstance(segment, Segment):
        return segment
    if isinstance(segment, (tuple, list)) and len(segment) == 2:
        return Segment(segment[0], segment[1])
    raise TypeError(f"segment must be a Segment or a (from_stop, to_stop) pair, got {segment!r}")


class ResourceState(enum.IntEnum):
    UNSPECIFIED = 0
    FREE = 1
    HELD = 2
    CONFIRMED = 3


@dataclass(frozen=True)
class Claim:
    resource_id: str
    fence: int
    reference: str
    confirmed_at_unix_ms: int


@dataclass(frozen=True)
class ConfirmResult:
    fence: int
    claims: Tuple[Claim, ...]
    # True when the daemon replayed the stored result of an identical earlier
    # confirm (same idempotency key and request).
    replayed: bool


@dataclass(frozen=True)
class CancelResult:
    cancelled: int
    replayed: bool


@dataclass(frozen=True)
class ResourceStatus:
    """Diagnostic view of one resource; never permission for anything."""

    id: str
    state: ResourceState
    ttl_ms: int
    owned: bool


@dataclass(frozen=True)
class Health:
    live: bool
    ready: bool
    version: str
    redis: str
    postgres: str
    script_path: str
    release_path: str
    library: str
    connections: int
    in_flight: int
    draining: bool


def new_correlation_id() -> str:
    return uuid.uuid4().hex


def timeout_ms(seconds: float) -> int:
    """Relative deadline for the wire: at least 1 ms (0 would mean 'daemon default')."""
    return max(1, min(_MAX_TIMEOUT_MS, math.ceil(seconds * 1000)))


def check_ids(ids: Iterable[str]) -> List[str]:
    # A bare string is iterable too; "E7" would silently become ["E", "7"].
    if isinstance(ids, (str, bytes)):
        raise TypeError("ids must be a sequence of resource ids, not a single string")
    return list(ids)


def check_timeout(timeout: Optional[float], default: float) -> float:
    t = default if timeout is None else float(timeout)
    if not t > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    return t


# ---- requests -------------------------------------------------------------

def _with_segment(msg: Any, segment: Optional[SegmentLike]) -> Any:
    seg = as_segment(segment)
    if seg is not None:  # unset on the wire when None: namespaces without legs refuse one
        msg.segment.from_stop = seg.from_stop
        msg.segment.to_stop = seg.to_stop
    return msg


def hold_req(namespace: str, partition: str, ids: Sequence[str], ttl_ms: int,
             segment: Optional[SegmentLike] = None, session: bool = False) -> pb.HoldRequest:
    if session and ttl_ms:
        # The daemon refuses it too: a session hold's TTL is the namespace's
        # session_ttl_ms, renewed while the connection lives.
        raise InvalidArgument("a session hold takes no ttl_ms", field="ttl_ms")
    return _with_segment(pb.HoldRequest(namespace=namespace, partition=partition,
                                        ids=check_ids(ids), ttl_ms=ttl_ms,
                                        session=bool(session)), segment)


def extend_req(namespace, partition, ids, token, ttl_ms, segment=None) -> pb.ExtendRequest:
    return _with_segment(pb.ExtendRequest(namespace=namespace, partition=partition,
                                          ids=check_ids(ids), token=token, ttl_ms=ttl_ms), segment)


def release_req(namespace, partition, ids, token, segment=None) -> pb.ReleaseRequest:
    return _with_segment(pb.ReleaseRequest(namespace=namespace, partition=partition,
                                           ids=check_ids(ids), token=token), segment)


def confirm_req(namespace, partition, ids, token, idempotency_key, reference, payload,
                segment=None) -> pb.ConfirmRequest:
    if not idempotency_key:
        # Checked here because a confirm without a stable key cannot be retried safely.
        raise InvalidArgument("idempotency_key is required", field="idempotency_key")
    return _with_segment(pb.ConfirmRequest(namespace=namespace, partition=partition,
                                           ids=check_ids(ids), token=token,
                                           idempotency_key=idempotency_key, reference=reference,
                                           payload=bytes(payload)), segment)


def cancel_req(namespace, partition, ids, idempotency_key, reference, segment=None) -> pb.CancelRequest:
    if not idempotency_key:
        raise InvalidArgument("idempotency_key is required", field="idempotency_key")
    return _with_segment(pb.CancelRequest(namespace=namespace, partition=partition,
                                          ids=check_ids(ids), idempotency_key=idempotency_key,
                                          reference=reference), segment)


def status_req(namespace, partition, ids, token, segment=None) -> pb.StatusRequest:
    return _with_segment(pb.StatusRequest(namespace=namespace, partition=partition,
                                          ids=check_ids(ids), token=token or ""), segment)


def envelope(method: str, msg: Any, correlation_id: Optional[str], seconds: float,
             traceparent: Optional[str] = None) -> pb.Request:
    req = pb.Request(correlation_id=correlation_id or new_correlation_id(),
                     timeout_ms=timeout_ms(seconds),
                     traceparent=traceparent_for(traceparent))
    getattr(req, method).CopyFrom(msg)
    return req


# ---- responses ------------------------------------------------------------

def result_of(resp: pb.Response, method: str) -> Any:
    """The response's result message, or raise the exception for its code."""
    which = resp.WhichOneof("result")
    result = getattr(resp, which) if which else None
    if resp.code != Code.OK:
        raise error_for(resp.code, resp.message, field=resp.error.field,
                        resource_id=resp.error.resource_id,
                        correlation_id=resp.correlation_id, result=result)
    if which != method:
        raise error_for(Code.INTERNAL,
                        f"daemon answered {method} with result {which or 'none'}",
                        correlation_id=resp.correlation_id)
    return result


def confirm_result(r: pb.ConfirmResponse) -> ConfirmResult:
    return ConfirmResult(
        fence=r.fence,
        claims=tuple(Claim(c.resource_id, c.fence, c.reference, c.confirmed_at_unix_ms) for c in r.claims),
        replayed=r.replayed,
    )


def cancel_result(r: pb.CancelResponse) -> CancelResult:
    return CancelResult(cancelled=r.cancelled, replayed=r.replayed)


def status_result(r: pb.StatusResponse) -> List[ResourceStatus]:
    out = []
    for s in r.resources:
        try:
            state = ResourceState(s.state)
        except ValueError:
            state = ResourceState.UNSPECIFIED
        out.append(ResourceStatus(s.id, state, s.ttl_ms, s.owned))
    return out


def health_result(r: pb.HealthResponse) -> Health:
    return Health(live=r.live, ready=r.ready, version=r.version, redis=r.redis,
                  postgres=r.postgres, script_path=r.script_path, release_path=r.release_path,
                  library=r.library, connections=r.connections, in_flight=r.in_flight,
                  draining=r.draining)


def hold_repr(h: Any) -> str:
    # Deliberately leaves out the token.
    state = "active" if h.active else "finished"
    deg = ", degraded=True" if h.degraded else ""
    seg = f", segment=({h.segment.from_stop}, {h.segment.to_stop})" if h.segment else ""
    if getattr(h, "session", False):
        deg += ", session=True" + (f", lost={h.lost.code_name}" if h.lost is not None else "")
    return (f"{type(h).__name__}(namespace={h.namespace!r}, partition={h.partition!r}, "
            f"ids={list(h.ids)!r}{seg}, fence={h.fence}, ttl_ms={h.ttl_ms}{deg}, {state})")


# ---- session holds (docs/sessions.md) --------------------------------------

def is_session_event(resp: pb.Response) -> bool:
    """An unsolicited id-0 frame about this connection's session holds (any
    other id-0 frame is the daemon's fatal answer to the stream)."""
    return resp.id == 0 and resp.WhichOneof("result") == "session_event"


class SessionHolds:
    """The session holds taken on one connection, by (namespace, partition,
    fence), so that the daemon's SessionEvent and the connection's end reach
    the Hold objects. Holds are kept by weak reference: a Hold nobody keeps
    needs no news. Thread-safe (the blocking client's reader thread reports,
    the callers register)."""

    # Reports that came before their hold was registered (the reader may see
    # an event before the caller has taken the answer that granted the hold).
    EARLY_MAX = 1024

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holds: "weakref.WeakValueDictionary[Tuple[str, str, int], Any]" = \
            weakref.WeakValueDictionary()
        self._early: "OrderedDict[Tuple[str, str, int], HoldfastError]" = OrderedDict()
        self._ended: Optional[HoldfastError] = None

    def register(self, hold: Any) -> None:
        key = (hold.namespace, hold.partition, hold.fence)
        with self._lock:
            err = self._early.pop(key, None) or self._ended
            if err is None:
                self._holds[key] = hold
        if err is not None:
            hold._session_lost(err)

    def forget(self, hold: Any) -> None:
        key = (hold.namespace, hold.partition, hold.fence)
        with self._lock:
            if self._holds.get(key) is hold:
                del self._holds[key]

    def on_event(self, event: pb.SessionEvent) -> None:
        found = []
        with self._lock:
            for lost in event.lost:
                key = (lost.namespace, lost.partition, lost.fence)
                err = error_for(lost.reason, f"session hold lost: {lost.message}",
                                resource_id=lost.resource_id)
                hold = self._holds.pop(key, None)
                if hold is not None:
                    found.append((hold, err))
                else:
                    self._early[key] = err
                    while len(self._early) > self.EARLY_MAX:
                        self._early.popitem(last=False)
        for hold, err in found:
            hold._session_lost(err)

    def connection_ended(self, why: HoldfastError) -> None:
        """The connection broke: the daemon released its session holds (or,
        if the daemon died, they expire with their session TTL)."""
        err = Unavailable("session hold lost: its connection to holdfastd ended "
                          f"({why.message})")
        with self._lock:
            if self._ended is None:
                self._ended = err
            holds = list(self._holds.values())
            self._holds.clear()
            self._early.clear()
        for hold in holds:
            hold._session_lost(err)


def report_lost(hold: Any, err: HoldfastError,
                on_lost: "Optional[Callable[[Any], None]]") -> bool:
    """Record the loss on the hold once; run its on_lost callback. False when
    it was already known."""
    if hold._lost is not None:
        return False
    hold._lost = err
    if on_lost is not None:
        try:
            on_lost(hold)
        except Exception:  # a callback's bug must not kill the reader
            log.exception("holdfast: on_lost callback failed (correlation_id=%s)",
                          hold.correlation_id)
    return True


def scope_exit_failed(h: Any, err: HoldfastError, body_raised: bool) -> None:
    """The release sent when leaving a hold's scope failed with `err`.

    NOT_HELD, HELD_BY_ANOTHER, CONFIRMED and a closed client: nothing is ours
    to give back, so it is not an error. Anything else is raised, unless the
    scope is already ending by an exception, which must not be masked: then it
    is logged, and the hold expires with its TTL."""
    if err.code in SCOPE_EXIT_QUIET or isinstance(err, ClientClosed):
        h._active = False
        return
    if not body_raised:
        raise err
    log.warning("holdfast: release on leaving the hold's scope failed (correlation_id=%s): %s",
                h.correlation_id, err)
