"""Blocking client: one Unix-socket connection, many calls in flight, a reader thread."""

from __future__ import annotations

import itertools
import logging
import random
import select
import socket
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, TypeVar

from . import _model as m
from ._gen import holdfast_pb2 as pb
from .errors import (ClientClosed, DeadlineExceeded, HoldfastError, PermissionDenied,
                     ProtocolError, Unavailable, error_for)
from .framing import FrameError, FrameReader, decode_response, encode_request

log = logging.getLogger("holdfast")

T = TypeVar("T")


class _Pending:
    __slots__ = ("event", "response", "error")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.response: Optional[pb.Response] = None
        self.error: Optional[HoldfastError] = None


class _Connection:
    """One socket and its reader thread. Once broken it stays broken; the
    client replaces it on the next call."""

    def __init__(self, path: str, connect_timeout: float) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(connect_timeout)
            sock.connect(path)
            sock.settimeout(None)  # blocking reads in the reader thread
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._lock = threading.Lock()      # guards _pending and _broken
        self._wlock = threading.Lock()     # one frame on the wire at a time
        self._pending: Dict[int, _Pending] = {}
        self._broken: Optional[HoldfastError] = None
        self.sessions = m.SessionHolds()  # session holds taken on this connection
        self._reader = threading.Thread(target=self._read_loop, name="holdfast-reader", daemon=True)
        self._reader.start()

    @property
    def broken(self) -> bool:
        return self._broken is not None

    def send(self, req_id: int, frame: bytes, deadline: float) -> _Pending:
        """Queue the request and write its frame before the deadline.

        Raises Unavailable with `.unsent = True` when the frame certainly did
        not reach the daemon (safe to resend on a new connection)."""
        p = _Pending()
        with self._lock:
            if self._broken is not None:
                raise _unsent(Unavailable("connection to holdfastd is closed"))
            self._pending[req_id] = p
        try:
            self._write(frame, deadline)
        except BaseException:
            self.forget(req_id)
            raise
        return p

    def _write(self, frame: bytes, deadline: float) -> None:
        if not self._wlock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise DeadlineExceeded("deadline passed while waiting to send the request")
        try:
            view = memoryview(frame)
            sent = 0
            while sent < len(view):
                try:
                    # MSG_DONTWAIT: a stalled daemon must not block past the deadline,
                    # while the reader thread keeps its plain blocking recv.
                    sent += self._sock.send(view[sent:], socket.MSG_DONTWAIT)
                    continue
                except BlockingIOError:
                    pass
                except OSError as exc:
                    # EPIPE/ECONNRESET: the daemon closed; it processes only whole
                    # frames, so nothing of this request was acted on.
                    err = Unavailable(f"connection to holdfastd lost while sending: {exc}")
                    self.fail(err)
                    raise _unsent(Unavailable(str(err.message))) from exc
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not _wait_writable(self._sock, remaining):
                    if sent:
                        # Half a frame is on the wire: the stream cannot be resumed.
                        self.fail(Unavailable("connection dropped: a request was cut off by its deadline"))
                    raise DeadlineExceeded("deadline passed while sending the request (daemon not reading)")
        finally:
            self._wlock.release()

    def forget(self, req_id: int) -> Optional[_Pending]:
        with self._lock:
            return self._pending.pop(req_id, None)

    def _read_loop(self) -> None:
        reader = FrameReader()
        err: HoldfastError
        try:
            while True:
                data = self._sock.recv(65536)
                if not data:
                    err = Unavailable("holdfastd closed the connection")
                    break
                for body in reader.feed(data):
                    self._dispatch(decode_response(body))
        except FrameError as exc:
            err = ProtocolError(str(exc))
        except OSError as exc:
            err = Unavailable(f"connection to holdfastd lost: {exc}")
        except HoldfastError as exc:  # an id-0 answer: the daemon rejected the stream
            err = exc
        self.fail(err)

    def _dispatch(self, resp: pb.Response) -> None:
        if m.is_session_event(resp):
            self.sessions.on_event(resp.session_event)
            return
        if resp.id == 0:
            # The daemon could not read one of our frames and closes the connection;
            # every request on it shares that fate.
            raise error_for(resp.code, resp.message or "daemon rejected a frame",
                            field=resp.error.field, correlation_id=resp.correlation_id)
        p = self.forget(resp.id)
        if p is None:
            return  # answer to a call that already gave up on its deadline
        p.response = resp
        p.event.set()

    def fail(self, err: HoldfastError) -> None:
        """Break the connection and fail every call waiting on it."""
        with self._lock:
            if self._broken is None:
                self._broken = err
            pending, self._pending = self._pending, {}
        for p in pending.values():
            p.error = type(err)(err.message, code=err.code, field=err.field)
            p.event.set()
        self.sessions.connection_ended(self._broken)
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the reader's recv
        except OSError:
            pass

    def close(self) -> None:
        self.fail(ClientClosed("holdfast client is closed"))
        if threading.current_thread() is not self._reader:
            self._reader.join(timeout=5)
        self._sock.close()


def _unsent(err: HoldfastError) -> HoldfastError:
    err.unsent = True  # type: ignore[attr-defined]
    return err


def _wait_writable(sock: socket.socket, timeout: float) -> bool:
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLOUT)
    return bool(poller.poll(max(1, int(timeout * 1000))))


class Client:
    """Talks to holdfastd over its Unix socket. Thread-safe; share one per process.

    The socket is `socket_path`, else $HOLDFAST_SOCKET, else
    /run/holdfast/holdfast.sock. Every call has a deadline (`timeout` seconds,
    default `Client(timeout=5.0)`), sent to the daemon as timeout_ms and
    enforced here too. After the daemon
    restarts, the next call reconnects on its own. Failures raise HoldfastError
    subclasses carrying `.code`.
    """

    def __init__(self, socket_path: Optional[str] = None, *, timeout: float = m.DEFAULT_TIMEOUT,
                 connect_timeout: float = 1.0) -> None:
        self.socket_path = m.resolve_socket(socket_path)
        self.timeout = m.check_timeout(timeout, m.DEFAULT_TIMEOUT)
        self.connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._conn: Optional[_Connection] = None
        self._closed = False
        self._ids = itertools.count(1)
        self._ids_lock = threading.Lock()

    # ---- lifecycle --------------------------------------------------------

    def close(self) -> None:
        """Close the connection; calls waiting on it fail with ClientClosed."""
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client(socket_path={self.socket_path!r}, closed={self._closed})"

    # ---- transport --------------------------------------------------------

    def _next_id(self) -> int:
        with self._ids_lock:
            i = next(self._ids)
            if i >= 2**64:  # uint64 on the wire; 0 is reserved for "undecodable"
                self._ids = itertools.count(2)
                i = 1
            return i

    def _connection(self, deadline: float) -> _Connection:
        if not self._lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise DeadlineExceeded("deadline passed while waiting for the connection")
        try:
            if self._closed:
                raise ClientClosed("holdfast client is closed")
            if self._conn is not None and not self._conn.broken:
                return self._conn
            if self._conn is not None:
                self._conn.close()
                self._conn = None
                log.info("holdfast: reconnecting to %s", self.socket_path)
            self._conn = self._connect(deadline)
            return self._conn
        finally:
            self._lock.release()

    def _connect(self, deadline: float) -> _Connection:
        # A restarting daemon leaves no socket (ENOENT) or a dead one
        # (ECONNREFUSED) for a moment: keep trying until the call's deadline.
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            try:
                return _Connection(self.socket_path, max(0.001, min(self.connect_timeout, remaining)))
            except PermissionError as exc:
                raise PermissionDenied(f"cannot connect to holdfastd at {self.socket_path}: {exc}") from exc
            except OSError as exc:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise Unavailable(f"cannot connect to holdfastd at {self.socket_path}: {exc}") from exc
                time.sleep(min(m.reconnect_delay(attempt, random.random()), remaining))
                attempt += 1

    def _run(self, call: "m.Call[T]", timeout: Optional[float], correlation_id: Optional[str],
             traceparent: Optional[str] = None) -> T:
        """Send one request and wait for its answer: the API's value for it."""
        result, _, _ = self._call_on(call, timeout, correlation_id, traceparent)
        return call.result(result)

    def _call_on(self, call: "m.Call[Any]", timeout: Optional[float],
                 correlation_id: Optional[str], traceparent: Optional[str] = None
                 ) -> Tuple[Any, pb.Response, "_Connection"]:
        """Send one request and wait for its answer: (result message, response,
        the connection that carried it)."""
        seconds = call.seconds(timeout, self.timeout)
        deadline = time.monotonic() + seconds
        req = m.envelope(call.method, call.msg, correlation_id, seconds, traceparent)
        try:
            resp, conn = self._roundtrip(req, deadline, seconds)
        except HoldfastError as exc:
            if not exc.correlation_id:
                exc.correlation_id = req.correlation_id
            raise
        return m.result_of(resp, call.method), resp, conn

    def _roundtrip(self, req: pb.Request, deadline: float,
                   seconds: float) -> Tuple[pb.Response, "_Connection"]:
        for attempt in (1, 2):
            conn = self._connection(deadline)
            req.id = self._next_id()
            req.timeout_ms = m.timeout_ms(max(0.001, deadline - time.monotonic()))
            try:
                pending = conn.send(req.id, encode_request(req), deadline)
                break
            except Unavailable as exc:
                # Resend once on a fresh connection, but only when the daemon
                # cannot have seen the request.
                if attempt == 2 or not getattr(exc, "unsent", False):
                    raise
        if not pending.event.wait(max(0.0, deadline - time.monotonic())):
            if conn.forget(req.id) is not None:
                raise DeadlineExceeded(f"no answer from holdfastd within {seconds:g}s")
            pending.event.wait()  # answered in the same instant; take it
        if pending.error is not None:
            if type(pending.error) is Unavailable:
                pending.error.message += " (the outcome of this call is unknown)"
            raise pending.error
        assert pending.response is not None
        return pending.response, conn

    # ---- API --------------------------------------------------------------

    def hold(self, namespace: str, partition: str, ids: Sequence[str], *, ttl_ms: int = 0,
             segment: Optional[m.SegmentLike] = None, session: bool = False,
             on_lost: "Optional[Callable[[Hold], None]]" = None, wait: Optional[float] = None,
             timeout: Optional[float] = None, correlation_id: Optional[str] = None,
             traceparent: Optional[str] = None) -> "Hold":
        """Hold every id of `ids` in one partition, all or nothing.

        Returns a Hold; use it as a context manager to release it on exit.
        ttl_ms=0 uses the namespace's default TTL. `segment` (a Segment or a
        (from_stop, to_stop) pair) holds legs from_stop .. to_stop - 1 of each
        id, in a namespace with max_legs (and only there); the Hold remembers
        it for its extend, release, confirm, status and scope exit.

        session=True binds the hold to this client's connection
        (docs/sessions.md): the daemon renews it while the connection lives
        and releases it at once when the connection closes (the process
        exits or is killed). ttl_ms must then be 0. If the daemon cannot keep
        it, or the connection ends, `hold.lost` becomes the error that says
        why and `on_lost(hold)` runs once: on the client's reader thread, or
        in close() (keep it short).

        wait=seconds waits in line (docs/waiting.md) when an id is held by
        another token, instead of raising HeldByAnother at once: waiters are
        served in arrival order, all ids or none. When the wait runs out it
        raises HeldByAnother (or DeadlineExceeded), as without a wait; a sold
        id raises Confirmed at once. The call's deadline is then at least
        wait + 1 s (whatever `timeout` says), so the daemon answers first."""
        target = m.Seats.of(ids, segment)
        cid = correlation_id or m.new_correlation_id()
        r, resp, conn = self._call_on(m.hold_call(namespace, partition, target, ttl_ms,
                                                  session=session, wait=wait),
                                      timeout, cid, traceparent)
        h = Hold(self, namespace, partition, target.ids, r.token, r.fence, r.ttl_ms, cid,
                 degraded=resp.degraded, segment=target.segment)
        if session and not resp.degraded:
            h._bind_session(conn.sessions, on_lost)
        return h

    def extend(self, namespace: str, partition: str, ids: Sequence[str], token: str, *,
               ttl_ms: int = 0, segment: Optional[m.SegmentLike] = None,
               timeout: Optional[float] = None, correlation_id: Optional[str] = None,
               traceparent: Optional[str] = None) -> int:
        """Stretch a hold's TTL (owner-checked); returns the TTL applied."""
        return self._run(m.extend_call(namespace, partition, ids, token, ttl_ms, segment),
                         timeout, correlation_id, traceparent)

    def release(self, namespace: str, partition: str, ids: Sequence[str], token: str, *,
                segment: Optional[m.SegmentLike] = None, timeout: Optional[float] = None,
                correlation_id: Optional[str] = None, traceparent: Optional[str] = None) -> int:
        """Give a hold back (owner-checked); returns how many ids were released."""
        return self._run(m.release_call(namespace, partition, ids, token, segment),
                         timeout, correlation_id, traceparent)

    def confirm(self, namespace: str, partition: str, ids: Sequence[str], token: str, *,
                idempotency_key: str, reference: str = "", payload: bytes = b"",
                segment: Optional[m.SegmentLike] = None, timeout: Optional[float] = None,
                correlation_id: Optional[str] = None,
                traceparent: Optional[str] = None) -> m.ConfirmResult:
        """Turn a hold into a durable claim. Retry with the same idempotency_key
        after Unavailable/DeadlineExceeded: a confirm that committed answers
        again with its stored result (`replayed=True`)."""
        return self._run(m.confirm_call(namespace, partition, ids, token, idempotency_key,
                                        reference, payload, segment),
                         timeout, correlation_id, traceparent)

    def cancel(self, namespace: str, partition: str, ids: Sequence[str], *, idempotency_key: str,
               reference: str = "", segment: Optional[m.SegmentLike] = None,
               timeout: Optional[float] = None,
               correlation_id: Optional[str] = None,
               traceparent: Optional[str] = None) -> m.CancelResult:
        """Remove confirmed claims so the resources can be sold again (with
        `segment`: only those legs)."""
        return self._run(m.cancel_call(namespace, partition, ids, idempotency_key, reference,
                                       segment),
                         timeout, correlation_id, traceparent)

    def status(self, namespace: str, partition: str, ids: Sequence[str], *,
               token: Optional[str] = None, segment: Optional[m.SegmentLike] = None,
               timeout: Optional[float] = None,
               correlation_id: Optional[str] = None,
               traceparent: Optional[str] = None) -> List[m.ResourceStatus]:
        """Diagnostic state of each id (with `segment`: of each leg, "<id>@<leg>");
        never permission for anything."""
        return self._run(m.status_call(namespace, partition, ids, token, segment),
                         timeout, correlation_id, traceparent)

    def health(self, *, timeout: Optional[float] = None,
               correlation_id: Optional[str] = None, traceparent: Optional[str] = None) -> m.Health:
        return self._run(m.health_call(), timeout, correlation_id, traceparent)

    def metrics(self, *, timeout: Optional[float] = None,
                correlation_id: Optional[str] = None, traceparent: Optional[str] = None) -> str:
        """The daemon's counters in Prometheus text format."""
        return self._run(m.metrics_call(), timeout, correlation_id, traceparent)

    # ---- pools (docs/pools.md) ----------------------------------------------

    def hold_units(self, namespace: str, partition: str, units: m.UnitsLike, *, ttl_ms: int = 0,
                   wait: Optional[float] = None, timeout: Optional[float] = None,
                   correlation_id: Optional[str] = None,
                   traceparent: Optional[str] = None) -> "PoolHold":
        """Hold `count` units of each pool in a namespace of kind "pools",
        all or nothing: `units` is {"adult": 2, "child": 1} (or (pool, count)
        pairs). Returns a PoolHold; use it as a context manager to release it
        on exit. ttl_ms=0 uses the namespace's default TTL.

        HeldByAnother (resource_id: the pool) when a pool has fewer units free
        than asked (the rest is held: holds expire, try later); Confirmed
        when it has fewer left unsold (sold out). Nothing is taken then.
        `wait` (seconds) as in hold: wait in line for held units."""
        target = m.Units.of(units)
        cid = correlation_id or m.new_correlation_id()
        r, resp, _ = self._call_on(m.hold_call(namespace, partition, target, ttl_ms, wait=wait),
                                   timeout, cid, traceparent)
        return PoolHold(self, namespace, partition, target.items, r.token, r.fence, r.ttl_ms,
                        cid, degraded=resp.degraded)

    def extend_units(self, namespace: str, partition: str, pools: Iterable[str], token: str, *,
                     ttl_ms: int = 0, timeout: Optional[float] = None,
                     correlation_id: Optional[str] = None,
                     traceparent: Optional[str] = None) -> int:
        """Stretch the TTL of a hold of units (owner-checked, every pool of it);
        returns the TTL applied."""
        return self._run(m.extend_call(namespace, partition, m.pools_target(pools), token, ttl_ms),
                         timeout, correlation_id, traceparent)

    def release_units(self, namespace: str, partition: str, pools: Iterable[str], token: str, *,
                      timeout: Optional[float] = None, correlation_id: Optional[str] = None,
                      traceparent: Optional[str] = None) -> int:
        """Give a hold of units back (owner-checked); returns how many units."""
        return self._run(m.release_call(namespace, partition, m.pools_target(pools), token),
                         timeout, correlation_id, traceparent)

    def confirm_units(self, namespace: str, partition: str, units: m.UnitsLike, token: str, *,
                      idempotency_key: str, reference: str = "", payload: bytes = b"",
                      timeout: Optional[float] = None, correlation_id: Optional[str] = None,
                      traceparent: Optional[str] = None) -> m.PoolConfirmResult:
        """Sell exactly the units the token holds (else InvalidArgument,
        nothing decided). Conflict when PostgreSQL has too few units left or
        the hold was already confirmed; retry with the same idempotency_key
        after Unavailable/DeadlineExceeded (`replayed=True`)."""
        return self._run(m.confirm_call(namespace, partition, m.Units.of(units), token,
                                        idempotency_key, reference, payload),
                         timeout, correlation_id, traceparent)

    def cancel_units(self, namespace: str, partition: str, units: m.UnitsLike, *,
                     idempotency_key: str, reference: str, timeout: Optional[float] = None,
                     correlation_id: Optional[str] = None,
                     traceparent: Optional[str] = None) -> m.PoolCancelResult:
        """Give back `count` units of each pool from those sold under
        `reference` (the order confirmed with it), all pools or none:
        NotFound (resource_id: the pool) when fewer are sold under it."""
        return self._run(m.cancel_call(namespace, partition, m.Units.of(units), idempotency_key,
                                       reference),
                         timeout, correlation_id, traceparent)

    def pool_status(self, namespace: str, partition: str, pools: Iterable[str], *,
                    token: Optional[str] = None, timeout: Optional[float] = None,
                    correlation_id: Optional[str] = None,
                    traceparent: Optional[str] = None) -> List[m.PoolStatus]:
        """Capacity, sold, held and free units per pool (from the Redis
        mirror), and with `token` that token's units and TTL; a diagnostic."""
        return self._run(m.status_call(namespace, partition, m.pools_target(pools), token),
                         timeout, correlation_id, traceparent)

    def set_capacity(self, namespace: str, partition: str, pool: str, capacity: int, *,
                     timeout: Optional[float] = None, correlation_id: Optional[str] = None,
                     traceparent: Optional[str] = None) -> m.PoolCapacity:
        """Set a pool's capacity (units it may sell in total, sold included) in
        PostgreSQL. FailedPrecondition (field "capacity") below what is sold.
        An absolute value: safe to retry."""
        return self._run(m.set_capacity_call(namespace, partition, pool, capacity),
                         timeout, correlation_id, traceparent)

    def set_default_capacity(self, namespace: str, partition: str, capacity: int, *,
                             timeout: Optional[float] = None,
                             correlation_id: Optional[str] = None,
                             traceparent: Optional[str] = None) -> m.PoolCapacity:
        """Set the partition's default capacity: that of every pool of it with
        none of its own (e.g. 1 for one-per-user pools)."""
        return self._run(m.set_capacity_call(namespace, partition, "", capacity,
                                             partition_default=True),
                         timeout, correlation_id, traceparent)

    def get_capacity(self, namespace: str, partition: str, pools: Iterable[str] = (), *,
                     timeout: Optional[float] = None, correlation_id: Optional[str] = None,
                     traceparent: Optional[str] = None) -> m.Capacities:
        """Capacity in effect and sold units per pool, and the partition's
        default, as PostgreSQL has them (also refreshes the Redis mirror)."""
        return self._run(m.get_capacity_call(namespace, partition, pools),
                         timeout, correlation_id, traceparent)


class _HoldCalls(m.HoldBase):
    """The calls every blocking hold handle makes on its own target."""

    _client: Client

    def _run(self, call: "m.Call[T]", timeout: Optional[float],
             traceparent: Optional[str]) -> T:
        return self._client._run(call, timeout, self.correlation_id, traceparent)

    def _confirm(self, idempotency_key: str, reference: str, payload: bytes,
                 timeout: Optional[float], traceparent: Optional[str]) -> Any:
        res = self._run(m.confirm_call(self.namespace, self.partition, self._target, self._token,
                                       idempotency_key, reference, payload),
                        timeout, traceparent)
        self._finished()  # the daemon released/marked the hold after committing
        return res

    def _status(self, timeout: Optional[float], traceparent: Optional[str]) -> Any:
        return self._run(m.status_call(self.namespace, self.partition, self._target, self._token),
                         timeout, traceparent)

    def extend(self, ttl_ms: int = 0, *, timeout: Optional[float] = None,
               traceparent: Optional[str] = None) -> int:
        """Stretch the hold's TTL; returns the TTL applied (ms)."""
        self.ttl_ms = self._run(m.extend_call(self.namespace, self.partition, self._target,
                                              self._token, ttl_ms), timeout, traceparent)
        return self.ttl_ms

    def release(self, *, timeout: Optional[float] = None,
                traceparent: Optional[str] = None) -> int:
        """Give the hold back; returns how many ids (pools: units) were released."""
        n = self._run(m.release_call(self.namespace, self.partition, self._target, self._token),
                      timeout, traceparent)
        self._finished()
        return n

    def __enter__(self: "H") -> "H":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self._active:
            return
        try:
            self.release()
        except HoldfastError as err:
            m.scope_exit_failed(self, err, body_raised=exc_type is not None)


H = TypeVar("H", bound=_HoldCalls)


class Hold(_HoldCalls):
    """A granted hold. The token is available as `.token` but never shown by
    repr/str. As a context manager it releases the hold on exit unless it was
    released or confirmed through it; an expired hold (NOT_HELD), one taken
    over since (HELD_BY_ANOTHER) or sold (CONFIRMED) is not an error there.
    `segment` is the journey segment it holds (None outside namespaces with
    legs); every later call through it acts on the same legs."""

    _target: m.Seats

    def __init__(self, client: Client, namespace: str, partition: str, ids: Sequence[str],
                 token: str, fence: int, ttl_ms: int, correlation_id: str,
                 degraded: bool = False, segment: Optional[m.SegmentLike] = None) -> None:
        super().__init__(client, namespace, partition, m.Seats.of(ids, segment), token, fence,
                         ttl_ms, correlation_id, degraded)

    @property
    def ids(self) -> Tuple[str, ...]:
        return self._target.ids

    @property
    def segment(self) -> Optional[m.Segment]:
        return self._target.segment

    def confirm(self, idempotency_key: str, *, reference: str = "", payload: bytes = b"",
                timeout: Optional[float] = None,
                traceparent: Optional[str] = None) -> m.ConfirmResult:
        return self._confirm(idempotency_key, reference, payload, timeout, traceparent)

    def status(self, *, timeout: Optional[float] = None,
               traceparent: Optional[str] = None) -> List[m.ResourceStatus]:
        return self._status(timeout, traceparent)


class PoolHold(_HoldCalls):
    """A granted hold of units (a namespace of kind "pools"). Like Hold: the
    token is never shown by repr/str, and as a context manager it releases
    the units on exit unless they were released or confirmed through it.
    `units` is {pool: count}, `pools` the pool names."""

    _target: m.Units

    def __init__(self, client: Client, namespace: str, partition: str, units: m.UnitsLike,
                 token: str, fence: int, ttl_ms: int, correlation_id: str,
                 degraded: bool = False) -> None:
        super().__init__(client, namespace, partition, m.Units.of(units), token, fence, ttl_ms,
                         correlation_id, degraded)

    @property
    def units(self) -> Dict[str, int]:
        return self._target.as_dict()

    @property
    def pools(self) -> Tuple[str, ...]:
        return self._target.pools

    def confirm(self, idempotency_key: str, *, reference: str = "", payload: bytes = b"",
                timeout: Optional[float] = None,
                traceparent: Optional[str] = None) -> m.PoolConfirmResult:
        """Sell the held units (see Client.confirm_units)."""
        return self._confirm(idempotency_key, reference, payload, timeout, traceparent)

    def status(self, *, timeout: Optional[float] = None,
               traceparent: Optional[str] = None) -> List[m.PoolStatus]:
        """Each pool of the hold, with this hold's units (`owned`) and TTL."""
        return self._status(timeout, traceparent)
