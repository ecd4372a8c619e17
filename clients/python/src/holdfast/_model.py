"""Result types and the request/response mapping shared by Client and AsyncClient."""

from __future__ import annotations

import enum
import logging
import math
import os
import threading
import warnings
import weakref
from collections import OrderedDict
from random import getrandbits as _getrandbits
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Generic, Iterable, Iterator, List, Optional, Tuple, TypeVar

from ._deprecated import HoldAliases
from ._gen import holdfast_pb2 as pb
# SegmentLike, TargetLike and as_target serve the clients too, as m.<name>.
from ._targets import _MAX_UINT32, Seats, SegmentLike, TargetLike, as_target, check_names
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
    """The answer of a Confirm: `claims` for seats (one per id, or per leg),
    `units` ({pool: count} sold, in the hold's order) for pools."""

    fence: int
    claims: Tuple[Claim, ...] = ()
    # True when the daemon replayed the stored result of an identical earlier
    # confirm (same idempotency key and request).
    replayed: bool = False
    units: Dict[str, int] = field(default_factory=dict, hash=False)
    confirmed_at_unix_ms: int = 0  # pools: when PostgreSQL committed the sale


@dataclass(frozen=True)
class CancelResult:
    """The answer of a Cancel: ids (legs) or units given back, and for pools
    how many of each pool."""

    cancelled: int
    replayed: bool = False
    units: Dict[str, int] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class ResourceStatus:
    """Diagnostic view of one resource; never permission for anything."""

    id: str
    state: ResourceState
    ttl_ms: int
    owned: bool


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
class StatusResult:
    """The answer of a Status, for every kind of target: `resources` for
    seats (per id, or per leg "<id>@<leg>"), `pools` for units."""

    resources: Tuple[ResourceStatus, ...] = ()
    pools: Tuple[PoolStatus, ...] = ()

    # Deprecated, for one release: status calls returned a plain list (of
    # ResourceStatus, or of PoolStatus for pools), so the result still reads
    # as one.
    def _as_list(self) -> List[Any]:
        warnings.warn("reading a StatusResult as a list is deprecated: use .resources "
                      "(seats) or .pools (units)", DeprecationWarning, stacklevel=3)
        return [*self.resources, *self.pools]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._as_list())

    def __len__(self) -> int:
        return len(self._as_list())

    def __getitem__(self, i: Any) -> Any:
        return self._as_list()[i]


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
# deadline (`min_seconds`). What a request acts on is its target (Seats or
# Units, _targets.py), which fills the message's target fields.

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


def _require_key(idempotency_key: str) -> None:
    if not idempotency_key:
        # Checked here because a confirm without a stable key cannot be retried safely.
        raise InvalidArgument("idempotency_key is required", field="idempotency_key")


def hold_call(namespace: str, partition: str, target: TargetLike, ttl_ms: int = 0,
              session: bool = False, wait: Optional[float] = None) -> Call[pb.HoldResponse]:
    """Hold: the answer stays a HoldResponse, the clients make the handle.
    `wait` (seconds) queues behind a holder instead of answering
    HELD_BY_ANOTHER at once; the call's deadline is then at least the wait
    plus WAIT_MARGIN."""
    target = as_target(target)
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


def extend_call(namespace: str, partition: str, target: TargetLike, token: str,
                ttl_ms: int = 0) -> Call[int]:
    msg = as_target(target).put(pb.ExtendRequest(namespace=namespace, partition=partition,
                                                 token=token, ttl_ms=ttl_ms))
    return Call("extend", msg, lambda r: r.ttl_ms)


def release_call(namespace: str, partition: str, target: TargetLike, token: str) -> Call[int]:
    msg = as_target(target).put(pb.ReleaseRequest(namespace=namespace, partition=partition,
                                                  token=token))
    return Call("release", msg, lambda r: r.released)


def confirm_call(namespace: str, partition: str, target: TargetLike, token: str,
                 idempotency_key: str, reference: str = "",
                 payload: bytes = b"") -> "Call[ConfirmResult]":
    _require_key(idempotency_key)
    msg = as_target(target).put(pb.ConfirmRequest(
        namespace=namespace, partition=partition, token=token, idempotency_key=idempotency_key,
        reference=reference, payload=bytes(payload)), counts=True)
    return Call("confirm", msg, confirm_result)


def cancel_call(namespace: str, partition: str, target: TargetLike, idempotency_key: str,
                reference: str = "") -> "Call[CancelResult]":
    _require_key(idempotency_key)
    msg = as_target(target).put(pb.CancelRequest(
        namespace=namespace, partition=partition, idempotency_key=idempotency_key,
        reference=reference), counts=True)
    return Call("cancel", msg, cancel_result)


def status_call(namespace: str, partition: str, target: TargetLike,
                token: Optional[str] = None) -> "Call[StatusResult]":
    msg = as_target(target).put(pb.StatusRequest(namespace=namespace, partition=partition,
                                                 token=token or ""))
    return Call("status", msg, status_result)


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


def _units(takes: Iterable[Any]) -> Dict[str, int]:
    return {t.pool: t.count for t in takes}


def confirm_result(r: pb.ConfirmResponse) -> ConfirmResult:
    return ConfirmResult(
        fence=r.fence,
        claims=tuple(Claim(c.resource_id, c.fence, c.reference, c.confirmed_at_unix_ms)
                     for c in r.claims),
        replayed=r.replayed, units=_units(r.units), confirmed_at_unix_ms=r.confirmed_at_unix_ms)


def cancel_result(r: pb.CancelResponse) -> CancelResult:
    return CancelResult(cancelled=r.cancelled, replayed=r.replayed, units=_units(r.units))


def _state(value: int) -> ResourceState:
    try:
        return ResourceState(value)
    except ValueError:  # a state this client does not know (a newer daemon)
        return ResourceState.UNSPECIFIED


def status_result(r: pb.StatusResponse) -> StatusResult:
    return StatusResult(
        resources=tuple(ResourceStatus(s.id, _state(s.state), s.ttl_ms, s.owned)
                        for s in r.resources),
        pools=tuple(PoolStatus(p.pool, p.capacity, p.sold, p.held, p.free, p.owned, p.ttl_ms)
                    for p in r.pools))


def health_result(r: pb.HealthResponse) -> Health:
    return Health(live=r.live, ready=r.ready, version=r.version, redis=r.redis,
                  postgres=r.postgres, script_path=r.script_path, release_path=r.release_path,
                  library=r.library, connections=r.connections, in_flight=r.in_flight,
                  draining=r.draining)


def pool_capacity(p: pb.PoolCapacity) -> PoolCapacity:
    return PoolCapacity(p.pool, p.capacity, p.sold, p.partition_default)


def capacities_result(r: pb.GetCapacityResponse) -> Capacities:
    return Capacities(tuple(pool_capacity(p) for p in r.pools), r.default_capacity)


def token_fence(token: str) -> int:
    """The fence a token starts with ("<fence>.<random>"), 0 when it does not:
    the daemon, not the client, judges a token."""
    head, dot, _ = token.partition(".")
    return int(head) if dot and head.isascii() and head.isdigit() else 0


class HoldBase(HoldAliases):
    """What every hold handle (Hold, AsyncHold) keeps, for seats and units
    alike: where it is, its target, its token, and its session state. The
    token is available as `.token` but never shown by repr/str."""

    def __init__(self, client: Any, namespace: str, partition: str, target: TargetLike,
                 token: str, fence: int = 0, ttl_ms: int = 0,
                 correlation_id: Optional[str] = None, degraded: bool = False) -> None:
        self._client = client
        self.namespace = namespace
        self.partition = partition
        self.target = as_target(target)
        self._token = token
        self.fence = fence
        self.ttl_ms = ttl_ms
        self.correlation_id = correlation_id or new_correlation_id()
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
                f"partition={self.partition!r}, target={self.target!r}, fence={self.fence}, "
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
