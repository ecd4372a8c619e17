"""Result types and the request/response mapping shared by Client and AsyncClient."""

from __future__ import annotations

import enum
import logging
import math
import os
import threading
import weakref
from collections import OrderedDict
from random import getrandbits as _getrandbits
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, Generic, Iterable, List, Mapping, Optional, Sequence,
                    Tuple, TypeVar, Union)

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
# A hold that waits in line (wait=...) gets a deadline of at least its wait
# plus this, so the daemon's answer when the wait runs out (HeldByAnother)
# arrives before the client gives up.
WAIT_MARGIN = 1.0  # seconds

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


# ---- pools (docs/pools.md) ---------------------------------------------------

@dataclass(frozen=True)
class PoolConfirmResult:
    """A confirmed hold of units: what was sold, and when (PostgreSQL's clock)."""

    fence: int
    units: Dict[str, int] = field(hash=False)  # pool -> units sold, in the hold's order
    confirmed_at_unix_ms: int
    # True when the daemon replayed the stored result of an identical earlier
    # confirm (same idempotency key and request).
    replayed: bool


@dataclass(frozen=True)
class PoolCancelResult:
    """Units given back from those sold under a reference."""

    cancelled: int  # units, all pools together
    units: Dict[str, int] = field(hash=False)  # pool -> units given back
    replayed: bool


@dataclass(frozen=True)
class PoolStatus:
    """A pool as Redis sees it now (capacity and sold mirrored from
    PostgreSQL); a diagnostic, never permission for anything."""

    pool: str
    capacity: int
    sold: int
    held: int   # units in live holds, everyone's
    free: int   # capacity - sold - held, 0 when that is negative
    owned: int  # units the request's token holds in this pool
    ttl_ms: int  # remaining TTL of the token's hold (0 when it holds none)


@dataclass(frozen=True)
class PoolCapacity:
    """A pool as PostgreSQL has it. `pool` is "" for the partition's default."""

    pool: str
    capacity: int  # in effect: its own, or the partition's default
    sold: int
    partition_default: bool  # True when it follows the partition's default


@dataclass(frozen=True)
class Capacities:
    """GetCapacity: the pools asked for, and the partition's default capacity
    (0 when none was set)."""

    pools: Tuple[PoolCapacity, ...]
    default_capacity: int

    def get(self, pool: str) -> Optional[PoolCapacity]:
        """The named pool's capacity, or None when it was not asked for."""
        return next((p for p in self.pools if p.pool == pool), None)


UnitsLike = Union[Mapping[str, int], Iterable[Tuple[str, int]]]


# A random (version 4) UUID as 32 hex digits, made without a UUID object (a
# tenth of uuid.uuid4().hex's cost, on every hold): random's generator is
# seeded from the OS and reseeded in a forked child.
_UUID4_MASK = ~((0xC000 << 48) | (0xF000 << 64)) & (2**128 - 1)
_UUID4_BITS = (0x8000 << 48) | (4 << 76)


def new_correlation_id() -> str:
    return "%032x" % ((_getrandbits(128) & _UUID4_MASK) | _UUID4_BITS)


def timeout_ms(seconds: float) -> int:
    """Relative deadline for the wire: at least 1 ms (0 would mean 'daemon default')."""
    return max(1, min(_MAX_TIMEOUT_MS, math.ceil(seconds * 1000)))


def check_ids(ids: Iterable[str]) -> List[str]:
    # A bare string is iterable too; "E7" would silently become ["E", "7"].
    if isinstance(ids, (str, bytes)):
        raise TypeError("ids must be a sequence of resource ids, not a single string")
    return list(ids)


def check_names(names: Iterable[str], what: str = "pools") -> List[str]:
    """Pool names (a mapping of units gives its pools)."""
    if isinstance(names, (str, bytes)):
        raise TypeError(f"{what} must be a sequence of pool names, not a single string")
    return list(names)


def wait_ms(wait: Optional[float]) -> int:
    """HoldRequest.wait_ms for a wait of `wait` seconds (None or 0: no wait),
    rounded up to whole milliseconds."""
    if wait is None:
        return 0
    if isinstance(wait, bool) or not isinstance(wait, (int, float)):
        raise TypeError(f"wait must be a number of seconds, got {wait!r}")
    if not 0 <= wait < math.inf:
        raise ValueError(f"wait must be >= 0 seconds, got {wait!r}")
    ms = math.ceil(wait * 1000)
    if ms > _MAX_UINT32:
        raise ValueError(f"wait is too long: {wait!r} seconds")
    return ms


def check_timeout(timeout: Optional[float], default: float) -> float:
    t = default if timeout is None else float(timeout)
    if not t > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    return t


# ---- requests ----------------------------------------------------------------
#
# Every request of the API is built here, once, for both clients: a `Call`
# names the Request field it travels in, carries the message, and maps the
# result message to what the API returns; a hold's wait stretches its
# deadline (`min_seconds`). What a request acts on is its target: `Seats`
# (ids, and a journey segment where the namespace has legs), `Units` (pool ->
# count, in a namespace of kind "pools") or pool names alone (`_Pools`).

T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request of the API: `method` (the Request oneof field), `msg` (its
    message) and `result`, which turns the result message into the value the
    API returns."""

    method: str
    msg: Any
    result: Callable[[Any], T]
    # The call's deadline is at least this many seconds (a hold's wait + margin).
    min_seconds: float = 0.0

    def seconds(self, timeout: Optional[float], default: float) -> float:
        """The call's deadline: its timeout (else the client's), stretched to
        min_seconds."""
        return max(check_timeout(timeout, default), self.min_seconds)


def _same(r: Any) -> Any:
    return r


@dataclass(frozen=True)
class Seats:
    """The target of a seat request: resource ids, and the journey segment
    whose legs the request acts on (namespaces with max_legs, only there)."""

    ids: Tuple[str, ...]
    segment: Optional[Segment] = None

    @classmethod
    def of(cls, ids: Iterable[str], segment: Optional[SegmentLike] = None) -> "Seats":
        return cls(tuple(check_ids(ids)), as_segment(segment))

    def put(self, msg: Any, counts: bool = False) -> Any:
        """Fill `msg`'s target fields (`counts` matters only for pools)."""
        msg.ids.extend(self.ids)
        # Unset on the wire when None: namespaces without legs refuse one.
        if self.segment is not None:
            msg.segment.from_stop = self.segment.from_stop
            msg.segment.to_stop = self.segment.to_stop
        return msg

    def confirm_result(self, r: pb.ConfirmResponse) -> "ConfirmResult":
        return confirm_result(r)

    def cancel_result(self, r: pb.CancelResponse) -> "CancelResult":
        return cancel_result(r)

    def status_result(self, r: pb.StatusResponse) -> "List[ResourceStatus]":
        return status_result(r)

    def describe(self) -> str:
        seg = self.segment
        return f"ids={list(self.ids)!r}" + (f", segment=({seg.from_stop}, {seg.to_stop})"
                                            if seg else "")


@dataclass(frozen=True)
class Units:
    """The target of a pool request (a namespace of kind "pools"): `count`
    units of each pool, in the order given. Hold, Confirm and Cancel send the
    units; Extend, Release and Status only the pools."""

    items: Tuple[Tuple[str, int], ...]

    @classmethod
    def of(cls, units: UnitsLike) -> "Units":
        """From {"adult": 2, "child": 1} or [("adult", 2), ("child", 1)]."""
        if isinstance(units, (str, bytes)):
            raise TypeError('units must map pools to counts, e.g. {"adult": 2}, not a string')
        pairs = list(units.items()) if isinstance(units, Mapping) else list(units)
        items = []
        for pair in pairs:
            if isinstance(pair, (str, bytes)) or len(pair) != 2:
                raise TypeError(f"units must be (pool, count) pairs, got {pair!r}")
            pool, count = pair
            if not isinstance(pool, str):
                raise TypeError(f"a pool name must be a str, got {pool!r}")
            if isinstance(count, bool) or not isinstance(count, int):
                raise TypeError(f"the count of pool {pool!r} must be an int, got {count!r}")
            if not 0 <= count <= _MAX_UINT32:
                raise ValueError(f"the count of pool {pool!r} is out of range: {count}")
            items.append((pool, count))
        return cls(tuple(items))

    @property
    def pools(self) -> Tuple[str, ...]:
        return tuple(p for p, _ in self.items)

    def as_dict(self) -> Dict[str, int]:
        return dict(self.items)

    def put(self, msg: Any, counts: bool = False) -> Any:
        if counts:
            for pool, count in self.items:
                msg.units.add(pool=pool, count=count)
        else:
            msg.pools.extend(self.pools)
        return msg

    def confirm_result(self, r: pb.ConfirmResponse) -> PoolConfirmResult:
        return pool_confirm_result(r)

    def cancel_result(self, r: pb.CancelResponse) -> PoolCancelResult:
        return pool_cancel_result(r)

    def status_result(self, r: pb.StatusResponse) -> List[PoolStatus]:
        return pool_status_result(r)

    def describe(self) -> str:
        return f"units={self.as_dict()!r}"


@dataclass(frozen=True)
class _Pools:
    """Pools named without counts: the target of a low-level Extend, Release
    or Status of units."""

    names: Tuple[str, ...]

    def put(self, msg: Any, counts: bool = False) -> Any:
        if counts:
            raise TypeError("this call needs units (pool -> count), not pool names")
        msg.pools.extend(self.names)
        return msg

    def status_result(self, r: pb.StatusResponse) -> List[PoolStatus]:
        return pool_status_result(r)


def pools_target(pools: Iterable[str]) -> _Pools:
    return _Pools(tuple(check_names(pools)))


Target = Union[Seats, Units, _Pools]
HoldTarget = Union[Seats, Units]  # what a hold handle holds


def as_target(what: Union[Target, Iterable[str]], segment: Optional[SegmentLike] = None) -> Target:
    """A target as given, or the Seats of an ids sequence (and segment)."""
    if isinstance(what, (Seats, Units, _Pools)):
        if segment is not None and not isinstance(what, Seats):
            raise TypeError("a journey segment applies to seats, not to pools")
        return what
    return Seats.of(what, segment)


def _counted(target: Target) -> HoldTarget:
    if isinstance(target, _Pools):
        raise TypeError("this call needs units (pool -> count), not pool names")
    return target


def _require_key(idempotency_key: str) -> None:
    if not idempotency_key:
        # Checked here because a confirm without a stable key cannot be retried safely.
        raise InvalidArgument("idempotency_key is required", field="idempotency_key")


def hold_call(namespace: str, partition: str, what: Union[Target, Iterable[str]],
              ttl_ms: int = 0, segment: Optional[SegmentLike] = None,
              session: bool = False, wait: Optional[float] = None) -> Call[pb.HoldResponse]:
    """Hold: the answer stays a HoldResponse, the clients make the handle.
    `wait` (seconds) queues behind a holder instead of answering
    HELD_BY_ANOTHER at once; the call's deadline is then at least the wait
    plus WAIT_MARGIN."""
    target = _counted(as_target(what, segment))
    if session and not isinstance(target, Seats):
        # The daemon's pool holds have no session: it would be a plain TTL hold.
        raise TypeError("session holds are for seats: a hold of units takes a ttl_ms")
    if session and ttl_ms:
        # The daemon refuses it too: a session hold's TTL is the namespace's
        # session_ttl_ms, renewed while the connection lives.
        raise InvalidArgument("a session hold takes no ttl_ms", field="ttl_ms")
    waits = wait_ms(wait)
    msg = target.put(pb.HoldRequest(namespace=namespace, partition=partition, ttl_ms=ttl_ms,
                                    session=bool(session), wait_ms=waits), counts=True)
    return Call("hold", msg, _same, min_seconds=waits / 1000 + WAIT_MARGIN if waits else 0.0)


def extend_call(namespace: str, partition: str, what: Union[Target, Iterable[str]], token: str,
                ttl_ms: int = 0, segment: Optional[SegmentLike] = None) -> Call[int]:
    msg = as_target(what, segment).put(pb.ExtendRequest(namespace=namespace, partition=partition,
                                                        token=token, ttl_ms=ttl_ms))
    return Call("extend", msg, lambda r: r.ttl_ms)


def release_call(namespace: str, partition: str, what: Union[Target, Iterable[str]], token: str,
                 segment: Optional[SegmentLike] = None) -> Call[int]:
    msg = as_target(what, segment).put(pb.ReleaseRequest(namespace=namespace, partition=partition,
                                                         token=token))
    return Call("release", msg, lambda r: r.released)


def confirm_call(namespace: str, partition: str, what: Union[Target, Iterable[str]], token: str,
                 idempotency_key: str, reference: str = "", payload: bytes = b"",
                 segment: Optional[SegmentLike] = None) -> Call[Any]:
    _require_key(idempotency_key)
    target = _counted(as_target(what, segment))
    msg = target.put(pb.ConfirmRequest(namespace=namespace, partition=partition, token=token,
                                       idempotency_key=idempotency_key, reference=reference,
                                       payload=bytes(payload)), counts=True)
    return Call("confirm", msg, target.confirm_result)


def cancel_call(namespace: str, partition: str, what: Union[Target, Iterable[str]],
                idempotency_key: str, reference: str = "",
                segment: Optional[SegmentLike] = None) -> Call[Any]:
    _require_key(idempotency_key)
    target = _counted(as_target(what, segment))
    msg = target.put(pb.CancelRequest(namespace=namespace, partition=partition,
                                      idempotency_key=idempotency_key, reference=reference),
                     counts=True)
    return Call("cancel", msg, target.cancel_result)


def status_call(namespace: str, partition: str, what: Union[Target, Iterable[str]],
                token: Optional[str] = None, segment: Optional[SegmentLike] = None) -> Call[Any]:
    target = as_target(what, segment)
    msg = target.put(pb.StatusRequest(namespace=namespace, partition=partition, token=token or ""))
    return Call("status", msg, target.status_result)


def health_call() -> "Call[Health]":
    return Call("health", pb.HealthRequest(), health_result)


def metrics_call() -> Call[str]:
    return Call("metrics", pb.MetricsRequest(), lambda r: r.text)


def set_capacity_call(namespace: str, partition: str, pool: str, capacity: int,
                      partition_default: bool = False) -> Call[PoolCapacity]:
    """SetCapacity of one pool, or (partition_default, pool "") of the
    partition's default."""
    if isinstance(capacity, bool) or not isinstance(capacity, int):
        raise TypeError(f"capacity must be an int, got {capacity!r}")
    if capacity < 0:
        raise ValueError(f"capacity must be >= 0, got {capacity}")
    msg = pb.SetCapacityRequest(namespace=namespace, partition=partition, pool=pool,
                                capacity=capacity, partition_default=bool(partition_default))
    return Call("set_capacity", msg, lambda r: pool_capacity(r.pool))


def get_capacity_call(namespace: str, partition: str,
                      pools: Iterable[str] = ()) -> Call[Capacities]:
    msg = pb.GetCapacityRequest(namespace=namespace, partition=partition,
                                pools=check_names(pools))
    return Call("get_capacity", msg, capacities_result)


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


def _units(takes: Iterable[Any]) -> Dict[str, int]:
    return {t.pool: t.count for t in takes}


def pool_confirm_result(r: pb.ConfirmResponse) -> PoolConfirmResult:
    return PoolConfirmResult(fence=r.fence, units=_units(r.units),
                             confirmed_at_unix_ms=r.confirmed_at_unix_ms, replayed=r.replayed)


def pool_cancel_result(r: pb.CancelResponse) -> PoolCancelResult:
    return PoolCancelResult(cancelled=r.cancelled, units=_units(r.units), replayed=r.replayed)


def pool_status_result(r: pb.StatusResponse) -> List[PoolStatus]:
    return [PoolStatus(p.pool, p.capacity, p.sold, p.held, p.free, p.owned, p.ttl_ms)
            for p in r.pools]


def pool_capacity(p: pb.PoolCapacity) -> PoolCapacity:
    return PoolCapacity(p.pool, p.capacity, p.sold, p.partition_default)


def capacities_result(r: pb.GetCapacityResponse) -> Capacities:
    return Capacities(tuple(pool_capacity(p) for p in r.pools), r.default_capacity)


class HoldBase:
    """What every hold handle (Hold, AsyncHold, and their pool versions) keeps:
    where it is, its target, its token, and its session state. The token is
    available as `.token` but never shown by repr/str."""

    def __init__(self, client: Any, namespace: str, partition: str, target: HoldTarget, token: str,
                 fence: int, ttl_ms: int, correlation_id: str, degraded: bool = False) -> None:
        self._client = client
        self.namespace = namespace
        self.partition = partition
        self._target = target
        self._token = token
        self.fence = fence
        self.ttl_ms = ttl_ms
        self.correlation_id = correlation_id
        self.degraded = degraded
        self._active = True
        self.session = False
        self._sessions: Optional[SessionHolds] = None
        self._on_lost: Optional[Callable[[Any], None]] = None
        self._lost: Optional[HoldfastError] = None

    @property
    def token(self) -> str:
        """The proof of ownership. Keep it secret: do not log it."""
        return self._token

    @property
    def active(self) -> bool:
        """False once released or confirmed through this object."""
        return self._active

    @property
    def lost(self) -> Optional[HoldfastError]:
        """A session hold the daemon reported lost, or whose connection ended:
        the error that says why (NotHeld, HeldByAnother, Confirmed, or
        Unavailable for the connection); None while it is held."""
        return self._lost

    def _bind_session(self, sessions: "SessionHolds",
                      on_lost: Optional[Callable[[Any], None]]) -> None:
        self.session = True
        self._sessions = sessions
        self._on_lost = on_lost
        sessions.register(self)

    def _session_lost(self, err: HoldfastError) -> None:
        if self._active:
            report_lost(self, err, self._on_lost)

    def _finished(self) -> None:
        """Released or confirmed through this object: no longer active, and
        out of its session."""
        self._active = False
        if self._sessions is not None:
            self._sessions.forget(self)

    def __repr__(self) -> str:
        # Deliberately leaves out the token.
        state = "active" if self._active else "finished"
        deg = ", degraded=True" if self.degraded else ""
        if self.session:
            deg += ", session=True"
            if self._lost is not None:
                deg += f", lost={self._lost.code_name}"
        return (f"{type(self).__name__}(namespace={self.namespace!r}, "
                f"partition={self.partition!r}, {self._target.describe()}, fence={self.fence}, "
                f"ttl_ms={self.ttl_ms}{deg}, {state})")

    __str__ = __repr__


# ---- session holds (docs/sessions.md) --------------------------------------

def is_session_event(resp: pb.Response) -> bool:
    """An unsolicited id-0 frame about this connection's session holds (any
    other id-0 frame is the daemon's fatal answer to the stream)."""
    return resp.id == 0 and resp.WhichOneof("result") == "session_event"


class SessionHolds:
    """The session holds taken on one connection, by (namespace, partition,
    fence), so that the daemon's SessionEvent and the connection's end reach
    the Hold objects. Holds are kept by weak reference: a Hold nobody keeps
    needs no news. Thread-safe (whichever thread reads the blocking client's
    connection reports, the callers register)."""

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

    def active(self) -> bool:
        """True while a session hold taken on the connection may still hear news."""
        with self._lock:
            return len(self._holds) > 0

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
