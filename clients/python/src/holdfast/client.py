"""Blocking client: one Unix-socket connection, many calls in flight, read by its callers."""

from __future__ import annotations

import itertools
import logging
import math
import random
import select
import socket
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, TypeVar

from . import _model as m
from ._deprecated import ClientAliases
from ._gen import holdfast_pb2 as pb
from .admin import Admin
from .errors import (ClientClosed, DeadlineExceeded, HoldfastError, PermissionDenied,
                     ProtocolError, Unavailable, error_for)
from .framing import FrameError, FrameReader, decode_response, encode_request

log = logging.getLogger("holdfast")

_allocate_lock = threading.Lock

T = TypeVar("T")


class _Pending:
    """One call in flight. `done` (with `response` or `error`) and the parking
    fields change under the connection's lock only."""

    __slots__ = ("response", "error", "done", "wake", "parked", "signalled", "frame", "unsent")

    def __init__(self) -> None:
        self.response: Optional[pb.Response] = None
        self.error: Optional[HoldfastError] = None
        self.done = False
        self.wake: Optional[Any] = None  # a lock held while parked, made on first park
        self.parked = False              # waiting on `wake` for its answer or the read role
        self.signalled = False           # `wake` was released and not yet consumed
        self.frame: Optional[bytes] = None  # its request
        self.unsent = False              # the frame certainly did not reach the daemon


class _Connection:
    """One socket, read by its callers (leader/followers).

    A caller whose request is in flight reads the socket itself when nobody
    else does (it takes the read role), dispatching every frame it reads:
    other callers' answers to them, session events to `sessions`, until its
    own answer comes; then it gives the role back and wakes one parked caller
    still waiting for its answer, which takes over. Callers that find the role
    taken park until their answer is dispatched to them or the role comes
    free. So one call alone on the connection reads its own answer, with no
    thread hand-off; while calls are in flight somebody is always reading.
    While the connection has session holds, a watcher thread reads too when
    no call does, so that their lost events (and the connection's end) are
    delivered when nothing is in flight. Once broken it stays broken; the
    client replaces it on the next call."""

    WATCH_RECHECK = 1.0  # seconds: how often an idle watcher checks it is still needed
    # Seconds without reading after which a call first looks for what came
    # meanwhile (_settle); calls in quick succession skip that syscall.
    SETTLE_AFTER = 0.001

    def __init__(self, path: str, connect_timeout: float) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(connect_timeout)
            sock.connect(path)
            sock.settimeout(None)  # blocking: reads poll first, sends use MSG_DONTWAIT
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._poller = select.poll()
        self._poller.register(sock.fileno(), select.POLLIN)
        # Guards _pending, _broken, the read role, parking and the watcher.
        self._lock = threading.Lock()
        self._wlock = threading.Lock()     # held by the one caller writing
        self._pending: Dict[int, _Pending] = {}
        self._outbox: List[_Pending] = []  # calls whose frames wait for the writer
        self._broken: Optional[HoldfastError] = None
        self._reading = False              # the read role is taken (a caller or the watcher)
        self._read_at = time.monotonic()   # when the role was last given back
        self._frames = FrameReader()       # used by the role's holder only
        self._close_socket = False         # closed: the role's holder closes the socket
        self._sock_closed = False
        self.sessions = m.SessionHolds()  # session holds taken on this connection
        self._watcher: Optional[threading.Thread] = None
        self._watch = _Pending()           # the watcher's parking slot

    @property
    def broken(self) -> bool:
        return self._broken is not None

    def send(self, req_id: int, frame: bytes, deadline: float) -> _Pending:
        """Queue the request and see its frame written: by this caller, or by
        the caller writing when it came, which writes the frames queued
        meanwhile too, all in one send.

        Raises Unavailable with `.unsent = True` when the frame certainly did
        not reach the daemon (safe to resend on a new connection), and
        DeadlineExceeded when the deadline passed before it was written (it
        never will be). A frame another caller wrote that did not reach the
        daemon comes back the same way, as the call's error (`unsent`)."""
        if not self._pending and not self._reading and \
                time.monotonic() - self._read_at > self.SETTLE_AFTER:
            self._settle()
        p = _Pending()
        p.frame = frame
        with self._lock:
            if self._broken is not None:
                raise _unsent(Unavailable("connection to holdfastd is closed"))
            self._pending[req_id] = p
            self._outbox.append(p)
        if self._wlock.acquire(False):
            try:
                self._flush(p, deadline)
            except BaseException:
                self.forget(req_id)
                raise
        return p

    def _flush(self, mine: _Pending, deadline: float) -> None:
        """Holding the write lock: write every queued frame, then give the lock
        back; again while frames were queued meanwhile by callers that found it
        taken (they count on this, so none is left behind)."""
        wlock = self._wlock
        while True:
            try:
                with self._lock:
                    batch, self._outbox = self._outbox, []
                if batch:
                    self._write(batch, mine, deadline)
            finally:
                wlock.release()
            if not self._outbox or not wlock.acquire(False):
                return

    def _write(self, batch: List[_Pending], mine: _Pending, deadline: float) -> None:
        frames = [q.frame for q in batch]
        data = frames[0] if len(frames) == 1 else b"".join(frames)
        sent = 0
        view = None
        while True:
            try:
                # MSG_DONTWAIT: a stalled daemon must not block past the deadline.
                sent += self._sock.send(view[sent:] if view is not None else data,
                                        socket.MSG_DONTWAIT)
                if sent == len(data):
                    return
                if view is None:
                    view = memoryview(data)
                continue
            except BlockingIOError:
                pass
            except OSError as exc:
                # EPIPE/ECONNRESET: the daemon closed; it processes only whole
                # frames, so none not wholly written was acted on.
                for q in self._unwritten(batch, sent)[0]:
                    q.unsent = True
                self.fail(Unavailable(f"connection to holdfastd lost while sending: {exc}"))
                return
            if view is None:
                view = memoryview(data)
            remaining = deadline - time.monotonic()
            if remaining > 0 and _wait_writable(self._sock, remaining):
                continue
            # The daemon is not reading, and this caller's deadline passed.
            rest, cut = self._unwritten(batch, sent)
            if cut:
                # Half a frame is on the wire: the stream cannot be resumed.
                self.fail(Unavailable("connection dropped: a request was cut off by its deadline"))
            else:
                # Whole frames left: back to the front of the queue, for the next
                # writer; this caller's own is withdrawn (never written).
                with self._lock:
                    self._outbox[:0] = [q for q in rest if q is not mine]
            if mine in rest:
                raise DeadlineExceeded("deadline passed while sending the request (daemon not reading)")
            return

    @staticmethod
    def _unwritten(batch: List[_Pending], sent: int) -> Tuple[List[_Pending], bool]:
        """The calls of `batch` whose frames were not wholly written when
        `sent` bytes of it were, and whether the first of them was cut."""
        end = 0
        for i, q in enumerate(batch):
            start = end
            end += len(q.frame)  # type: ignore[arg-type]
            if end > sent:
                return batch[i:], start < sent
        return [], False

    def forget(self, req_id: int) -> Optional[_Pending]:
        with self._lock:
            return self._pending.pop(req_id, None)

    # ---- reading: leader/followers ------------------------------------------

    def wait(self, req_id: int, p: _Pending, deadline: float) -> bool:
        """Wait for the answer to `req_id` until `deadline`, reading the socket
        when nobody else does. True once answered (p.response or p.error set);
        False when the deadline passed first (the call is forgotten)."""
        lock = self._lock
        while True:
            lock.acquire()
            if p.done:
                lock.release()
                return True
            if not self._reading and time.monotonic() < deadline:
                self._reading = True
                lock.release()
                self._lead(p, deadline)
                if p.done:  # set under the lock, never unset: no need to take it
                    return True
                continue
            if time.monotonic() >= deadline:
                self._pending.pop(req_id, None)
                if p.signalled:
                    p.wake.acquire(False)  # type: ignore[union-attr]
                w = None if self._reading else self._handover_locked()
                lock.release()
                if w is not None:
                    w.release()
                return False
            # Park until the answer is dispatched to us or the role comes free.
            if p.wake is None:
                p.wake = _allocate_lock()
                p.wake.acquire()
            p.parked = True
            lock.release()
            try:
                p.wake.acquire(timeout=max(0.0, deadline - time.monotonic()))
            except BaseException:  # e.g. KeyboardInterrupt: leave, and pass a promotion on
                with lock:
                    self._pending.pop(req_id, None)
                    p.parked = False
                    w = None if self._reading else self._handover_locked()
                if w is not None:
                    w.release()
                raise
            if p.done:  # answered (its parking state no longer matters)
                return True
            with lock:
                p.parked = False
                if p.signalled:
                    p.signalled = False
                    p.wake.acquire(False)  # consume a release that raced the timeout

    def _settle(self) -> None:
        """Nobody read while nothing was in flight, and there is something to
        read: take it now (a late answer, a session event, or the daemon's
        close, which then lets this call go out on a new connection instead
        of failing with an unknown outcome)."""
        with self._lock:
            if self._reading or self._pending or self._broken is not None:
                return
            self._reading = True
        try:
            readable = self._poller.poll(0)
        except BaseException:
            self._release_role()
            raise
        if readable:
            self._lead(None, time.monotonic() + 0.001)
        else:
            self._release_role()

    def _signal_locked(self, p: _Pending) -> Optional[Any]:
        """Mark parked `p` woken; the caller releases the returned lock after
        dropping the connection's lock (at most one release per park)."""
        if p.parked and not p.signalled:
            p.signalled = True
            return p.wake
        return None

    def _handover_locked(self) -> Optional[Any]:
        """The read role is free: wake a parked caller still waiting for its
        answer (else the idle watcher) to take it, unless one is already woken."""
        for q in self._pending.values():
            if q.parked and not q.done:
                if q.signalled:
                    return None
                q.signalled = True
                return q.wake
        return self._signal_locked(self._watch)

    def _release_role(self) -> None:
        self._read_at = time.monotonic()
        with self._lock:
            self._reading = False
            w = self._handover_locked() if self._broken is None else None
            close = self._close_socket and not self._sock_closed
            if close:
                self._sock_closed = True
        if w is not None:
            w.release()
        if close:
            self._sock.close()

    def _lead(self, p: Optional[_Pending], deadline: float) -> None:
        """Holding the read role: read and dispatch frames until `p` is answered
        or the deadline passes (the watcher, p None: one batch), then give the
        role back."""
        err: Optional[HoldfastError] = None
        try:
            while p is None or not p.done:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                if not self._poller.poll(math.ceil(remaining * 1000)):
                    continue
                try:
                    data = self._sock.recv(65536, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    continue
                if not data:
                    err = Unavailable("holdfastd closed the connection")
                    break
                self._dispatch(self._frames.feed(data))
                if p is None:
                    break
        except FrameError as exc:
            err = ProtocolError(str(exc))
        except OSError as exc:
            err = Unavailable(f"connection to holdfastd lost: {exc}")
        except HoldfastError as exc:  # an id-0 answer: the daemon rejected the stream
            err = exc
        finally:
            if err is not None:
                self.fail(err)
            self._release_role()

    def _dispatch(self, bodies: List[bytes]) -> None:
        resps = [decode_response(body) for body in bodies]
        events = []
        wakes = []
        fatal: Optional[HoldfastError] = None
        with self._lock:
            pending = self._pending
            for resp in resps:
                if resp.id == 0:
                    if m.is_session_event(resp):
                        events.append(resp.session_event)
                        continue
                    # The daemon could not read one of our frames and closes the
                    # connection; every request on it shares that fate.
                    fatal = error_for(resp.code, resp.message or "daemon rejected a frame",
                                      field=resp.error.field, correlation_id=resp.correlation_id)
                    break
                q = pending.pop(resp.id, None)
                if q is None:
                    continue  # answer to a call that already gave up on its deadline
                q.response = resp
                q.done = True
                if q.parked and not q.signalled:
                    q.signalled = True
                    wakes.append(q.wake)
        for w in wakes:
            w.release()
        for ev in events:
            self.sessions.on_event(ev)
        if fatal is not None:
            raise fatal

    # ---- session holds: the watcher -----------------------------------------

    def watch_sessions(self) -> None:
        """The connection has a session hold: keep a watcher reading while no
        call does, until it has none."""
        with self._lock:
            if self._watcher is not None or self._broken is not None:
                return
            if self._watch.wake is None:
                self._watch.wake = _allocate_lock()
                self._watch.wake.acquire()
            t = threading.Thread(target=self._watch_loop, name="holdfast-watcher", daemon=True)
            self._watcher = t
        t.start()

    def _watch_loop(self) -> None:
        w = self._watch
        lock = self._lock
        while True:
            with lock:
                if self._broken is not None or not self.sessions.active():
                    self._watcher = None
                    return
                lead = not self._reading
                if lead:
                    self._reading = True
                else:
                    w.parked = True
            if lead:
                self._lead(None, time.monotonic() + self.WATCH_RECHECK)
                continue
            w.wake.acquire(timeout=self.WATCH_RECHECK)  # type: ignore[union-attr]
            with lock:
                w.parked = False
                if w.signalled:
                    w.signalled = False
                    w.wake.acquire(False)  # type: ignore[union-attr]

    # ---- the end --------------------------------------------------------------

    def fail(self, err: HoldfastError) -> None:
        """Break the connection and fail every call waiting on it."""
        wakes = []
        with self._lock:
            if self._broken is None:
                self._broken = err
            pending, self._pending = self._pending, {}
            queued, self._outbox = self._outbox, []
            for q in queued:
                q.unsent = True  # never handed to a writer
            for p in pending.values():
                p.error = type(err)(err.message, code=err.code, field=err.field)
                if p.unsent:
                    _unsent(p.error)  # the daemon cannot have acted on it
                p.done = True
                w = self._signal_locked(p)
                if w is not None:
                    wakes.append(w)
            w = self._signal_locked(self._watch)
            if w is not None:
                wakes.append(w)
        for w in wakes:
            w.release()
        self.sessions.connection_ended(self._broken)
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes a reader's poll
        except OSError:
            pass

    def close(self) -> None:
        self.fail(ClientClosed("holdfast client is closed"))
        with self._lock:
            watcher = self._watcher
            # A reader may be between poll and recv: the role's holder closes
            # the socket when it gives the role back (no fd reuse under it).
            close = not self._reading and not self._sock_closed
            if close:
                self._sock_closed = True
            else:
                self._close_socket = True
        if watcher is not None and threading.current_thread() is not watcher:
            watcher.join(timeout=5)
        if close:
            self._sock.close()


def _unsent(err: HoldfastError) -> HoldfastError:
    err.unsent = True  # type: ignore[attr-defined]
    return err


def _wait_writable(sock: socket.socket, timeout: float) -> bool:
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLOUT)
    return bool(poller.poll(max(1, int(timeout * 1000))))


class Client(ClientAliases):
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
        self._admin = Admin(self)

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
        i = next(self._ids)  # atomic: itertools.count runs under the GIL
        if i < 2**64:
            return i
        with self._ids_lock:  # uint64 on the wire; 0 is reserved for "undecodable"
            i = next(self._ids)
            if i >= 2**64:
                self._ids = itertools.count(2)
                i = 1
            return i

    def _connection(self, deadline: float) -> _Connection:
        conn = self._conn
        if conn is not None and conn._broken is None and not self._closed:
            return conn  # the usual case, without the lock
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
            except Unavailable as exc:
                # Resend once on a fresh connection, but only when the daemon
                # cannot have seen the request.
                if attempt == 2 or not getattr(exc, "unsent", False):
                    raise
                continue
            if not conn.wait(req.id, pending, deadline):
                raise DeadlineExceeded(f"no answer from holdfastd within {seconds:g}s")
            err = pending.error
            if err is None:
                break
            if getattr(err, "unsent", False):
                if attempt == 1:
                    continue  # written by another caller, and it did not get through
            elif type(err) is Unavailable:
                err.message += " (the outcome of this call is unknown)"
            raise err
        assert pending.response is not None
        return pending.response, conn

    # ---- API (protos/contract/surface.json) -----------------------------------

    @property
    def admin(self) -> Admin:
        """The operator's calls (set_capacity, set_default_capacity)."""
        return self._admin

    def hold(self, namespace: str, partition: str, target: m.TargetLike, *, ttl_ms: int = 0,
             session: bool = False, on_lost: "Optional[Callable[[Hold], None]]" = None,
             wait: Optional[float] = None, timeout: Optional[float] = None,
             correlation_id: Optional[str] = None, traceparent: Optional[str] = None,
             segment: Optional[m.SegmentLike] = None) -> "Hold":
        """Hold the whole target in one partition, all or nothing: Seats (or a
        plain list of ids) or Units of pools.

        Returns a Hold; use it as a context manager to release it on exit.
        ttl_ms=0 uses the namespace's default TTL. Seats(ids, segment) holds
        legs from_stop .. to_stop - 1 of each id, in a namespace with max_legs
        (and only there); the Hold keeps its target for its extend, release,
        confirm, status and scope exit. Units({"adult": 2}) raises
        HeldByAnother (resource_id: the pool) when a pool has fewer units free
        than asked, Confirmed when fewer are left unsold; nothing is taken then.

        session=True (seats) binds the hold to this client's connection
        (docs/sessions.md): the daemon renews it while the connection lives
        and releases it at once when the connection closes (the process
        exits or is killed). ttl_ms must then be 0. If the daemon cannot keep
        it, or the connection ends, `hold.lost` becomes the error that says
        why and `on_lost(hold)` runs once: on the thread reading the
        connection (a caller's, or the watcher thread the connection keeps
        while it has session holds), or in close(); keep it short and make
        no calls on the client from it.

        wait=seconds waits in line (docs/waiting.md) when the target is held
        by another token, instead of raising HeldByAnother at once: waiters are
        served in arrival order, all or nothing. When the wait runs out it
        raises HeldByAnother (or DeadlineExceeded), as without a wait; a sold
        id raises Confirmed at once. The call's deadline is then at least
        wait + 1 s (whatever `timeout` says), so the daemon answers first.

        segment= is deprecated: pass Seats(ids, segment)."""
        target = m.as_target(target, segment)
        cid = correlation_id or m.new_correlation_id()
        r, resp, conn = self._call_on(m.hold_call(namespace, partition, target, ttl_ms,
                                                  session=session, wait=wait),
                                      timeout, cid, traceparent)
        h = Hold(self, namespace, partition, target, r.token, r.fence, r.ttl_ms, cid,
                 degraded=resp.degraded)
        if session and not resp.degraded:
            h._bind_session(conn.sessions, on_lost)
            conn.watch_sessions()
        return h

    def resume(self, namespace: str, partition: str, target: m.TargetLike, token: str, *,
               correlation_id: Optional[str] = None) -> "Hold":
        """The Hold for a token received elsewhere (another process, a stored
        order), to extend, release, confirm or ask about it. No call to the
        daemon: its fence is read from the token and its ttl_ms is 0 until an
        extend. Give the same target the hold was taken with (Units with
        counts to confirm; pool names suffice to extend, release or ask)."""
        return Hold(self, namespace, partition, target, token, m.token_fence(token),
                    correlation_id=correlation_id)

    def cancel(self, namespace: str, partition: str, target: m.TargetLike, *,
               idempotency_key: str, reference: str = "", timeout: Optional[float] = None,
               correlation_id: Optional[str] = None, traceparent: Optional[str] = None,
               segment: Optional[m.SegmentLike] = None) -> m.CancelResult:
        """Give back what was sold under `reference` (the order confirmed with
        it), all or nothing, so it can be sold again: the seats (on a segment:
        only its legs), or `count` units of each pool (NotFound, resource_id
        the pool, when fewer are sold under it). Retry with the same
        idempotency_key: a cancel that committed answers `replayed=True`.

        segment= is deprecated: pass Seats(ids, segment)."""
        return self._run(m.cancel_call(namespace, partition, m.as_target(target, segment),
                                       idempotency_key, reference),
                         timeout, correlation_id, traceparent)

    def status(self, namespace: str, partition: str, target: m.TargetLike, *,
               token: Optional[str] = None, timeout: Optional[float] = None,
               correlation_id: Optional[str] = None, traceparent: Optional[str] = None,
               segment: Optional[m.SegmentLike] = None) -> m.StatusResult:
        """A diagnostic, never permission for anything: `resources`, the state
        of each id (on a segment: of each leg, "<id>@<leg>"), or `pools`, each
        pool's capacity, sold, held and free units (from the Redis mirror);
        with `token`, what that token holds.

        segment= is deprecated: pass Seats(ids, segment)."""
        return self._run(m.status_call(namespace, partition, m.as_target(target, segment),
                                       token),
                         timeout, correlation_id, traceparent)

    def get_capacity(self, namespace: str, partition: str, pools: Iterable[str] = (), *,
                     timeout: Optional[float] = None, correlation_id: Optional[str] = None,
                     traceparent: Optional[str] = None) -> m.Capacities:
        """Capacity in effect and sold units per pool, and the partition's
        default, as PostgreSQL has them (also refreshes the Redis mirror)."""
        return self._run(m.get_capacity_call(namespace, partition, pools),
                         timeout, correlation_id, traceparent)

    def health(self, *, timeout: Optional[float] = None,
               correlation_id: Optional[str] = None, traceparent: Optional[str] = None) -> m.Health:
        return self._run(m.health_call(), timeout, correlation_id, traceparent)

    def metrics(self, *, timeout: Optional[float] = None,
                correlation_id: Optional[str] = None, traceparent: Optional[str] = None) -> str:
        """The daemon's counters in Prometheus text format."""
        return self._run(m.metrics_call(), timeout, correlation_id, traceparent)


class Hold(m.HoldBase):
    """A granted hold of seats or units (`target`). The token is available as
    `.token` but never shown by repr/str. As a context manager it releases
    the hold on exit unless it was released or confirmed through it; an
    expired hold (NOT_HELD), one taken over since (HELD_BY_ANOTHER) or sold
    (CONFIRMED) is not an error there. Every call through it acts on its
    target (a segment's legs too)."""

    _client: Client

    def _run(self, call: "m.Call[T]", timeout: Optional[float],
             traceparent: Optional[str]) -> T:
        return self._client._run(call, timeout, self.correlation_id, traceparent)

    def extend(self, ttl_ms: int = 0, *, timeout: Optional[float] = None,
               traceparent: Optional[str] = None) -> int:
        """Stretch the hold's TTL; returns the TTL applied (ms)."""
        self.ttl_ms = self._run(m.extend_call(self.namespace, self.partition, self.target,
                                              self._token, ttl_ms), timeout, traceparent)
        return self.ttl_ms

    def release(self, *, timeout: Optional[float] = None,
                traceparent: Optional[str] = None) -> int:
        """Give the hold back; returns how many ids (legs; pools: units) were released."""
        n = self._run(m.release_call(self.namespace, self.partition, self.target, self._token),
                      timeout, traceparent)
        self._finished()
        return n

    def confirm(self, idempotency_key: str, *, reference: str = "", payload: bytes = b"",
                timeout: Optional[float] = None,
                traceparent: Optional[str] = None) -> m.ConfirmResult:
        """Turn the hold into a durable claim (pools: sell exactly the units
        held). Retry with the same idempotency_key after
        Unavailable/DeadlineExceeded: a confirm that committed answers again
        with its stored result (`replayed=True`)."""
        res = self._run(m.confirm_call(self.namespace, self.partition, self.target, self._token,
                                       idempotency_key, reference, payload),
                        timeout, traceparent)
        self._finished()  # the daemon released/marked the hold after committing
        return res

    def status(self, *, timeout: Optional[float] = None,
               traceparent: Optional[str] = None) -> m.StatusResult:
        """The target's state, with what this hold owns and its TTL."""
        return self._run(m.status_call(self.namespace, self.partition, self.target, self._token),
                         timeout, traceparent)

    def __enter__(self) -> "Hold":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self._active:
            return
        try:
            self.release()
        except HoldfastError as err:
            m.scope_exit_failed(self, err, body_raised=exc_type is not None)
