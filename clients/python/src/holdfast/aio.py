"""asyncio client: same API as Client, with coroutines."""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
from typing import (Any, Callable, Coroutine, Dict, Generator, Iterable, Optional, Tuple,
                    TypeVar)

from . import _model as m
from ._deprecated import ClientAliases
from ._gen import holdfast_pb2 as pb
from .admin import AsyncAdmin
from .errors import (ClientClosed, DeadlineExceeded, HoldfastError, PermissionDenied,
                     ProtocolError, Unavailable, error_for)
from .framing import FrameError, FrameReader, decode_response, encode_request

log = logging.getLogger("holdfast")

T = TypeVar("T")


class _AsyncConnection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._pending: Dict[int, "asyncio.Future[pb.Response]"] = {}
        self.broken: Optional[HoldfastError] = None
        self.sessions = m.SessionHolds()  # session holds taken on this connection
        self._task = asyncio.ensure_future(self._read_loop())

    async def _read_loop(self) -> None:
        frames = FrameReader()
        try:
            while True:
                data = await self._reader.read(65536)
                if not data:
                    raise Unavailable("holdfastd closed the connection")
                for body in frames.feed(data):
                    resp = decode_response(body)
                    if m.is_session_event(resp):
                        self.sessions.on_event(resp.session_event)
                        continue
                    if resp.id == 0:
                        # The daemon could not read one of our frames and closes.
                        raise error_for(resp.code, resp.message or "daemon rejected a frame",
                                        field=resp.error.field, correlation_id=resp.correlation_id)
                    fut = self._pending.pop(resp.id, None)
                    if fut is not None and not fut.done():
                        fut.set_result(resp)
        except HoldfastError as exc:
            self.fail(exc)
        except FrameError as exc:
            self.fail(ProtocolError(str(exc)))
        except (OSError, asyncio.IncompleteReadError) as exc:
            self.fail(Unavailable(f"connection to holdfastd lost: {exc}"))
        except asyncio.CancelledError:
            self.fail(ClientClosed("holdfast client is closed"))
            raise

    def send(self, req_id: int, frame: bytes) -> "asyncio.Future[pb.Response]":
        if self.broken is not None or self._writer.is_closing():
            raise _unsent(Unavailable("connection to holdfastd is closed"))
        fut = asyncio.get_running_loop().create_future()
        self._pending[req_id] = fut
        # The transport buffers the whole frame, so a deadline can never leave
        # half a frame on the wire.
        self._writer.write(frame)
        if self._writer.is_closing():
            # The write itself failed (EPIPE/ECONNRESET): the daemon had closed
            # and processes only whole frames, so it never saw this request.
            self._pending.pop(req_id, None)
            self.fail(Unavailable("holdfastd closed the connection"))
            raise _unsent(Unavailable("connection to holdfastd lost while sending"))
        return fut

    def buffered(self) -> bool:
        """Bytes wait in the transport (the daemon is slow to read)."""
        return self._writer.transport.get_write_buffer_size() > 0

    async def drain(self) -> None:
        try:
            await self._writer.drain()
        except (OSError, RuntimeError) as exc:
            self.fail(Unavailable(f"connection to holdfastd lost: {exc}"))

    def forget(self, req_id: int) -> None:
        self._pending.pop(req_id, None)

    def fail(self, err: HoldfastError) -> None:
        if self.broken is None:
            self.broken = err
        pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(type(err)(err.message, code=err.code, field=err.field))
        self.sessions.connection_ended(self.broken)
        self._writer.close()

    async def close(self) -> None:
        self.fail(ClientClosed("holdfast client is closed"))
        self._task.cancel()
        try:
            await self._task
        except (asyncio.CancelledError, Exception):
            pass


def _unsent(err: HoldfastError) -> HoldfastError:
    err.unsent = True  # type: ignore[attr-defined]
    return err


def _expire(fut: "asyncio.Future[pb.Response]", seconds: float) -> None:
    if not fut.done():
        fut.set_exception(DeadlineExceeded(f"no answer from holdfastd within {seconds:g}s"))


class AsyncClient(ClientAliases):
    """asyncio version of Client; use from one event loop.

        async with AsyncClient() as client:
            async with client.hold("seat", "run-1", ["E7"]) as h:
                await h.extend(120_000)
    """

    def __init__(self, socket_path: Optional[str] = None, *, timeout: float = m.DEFAULT_TIMEOUT,
                 connect_timeout: float = 1.0) -> None:
        self.socket_path = m.resolve_socket(socket_path)
        self.timeout = m.check_timeout(timeout, m.DEFAULT_TIMEOUT)
        self.connect_timeout = connect_timeout
        self._conn: Optional[_AsyncConnection] = None
        self._lock: Optional[asyncio.Lock] = None  # created inside the loop
        self._closed = False
        self._ids = itertools.count(1)
        self._last_connect_error: Optional[BaseException] = None
        self._admin = AsyncAdmin(self)

    async def aclose(self) -> None:
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    close = aclose

    @property
    def closed(self) -> bool:
        return self._closed

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"AsyncClient(socket_path={self.socket_path!r}, closed={self._closed})"

    def _next_id(self) -> int:
        i = next(self._ids)
        if i >= 2**64:
            self._ids = itertools.count(2)
            i = 1
        return i

    async def _connection(self) -> _AsyncConnection:
        if self._closed:
            raise ClientClosed("holdfast client is closed")
        if self._conn is not None and self._conn.broken is None:
            return self._conn
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._closed:
                raise ClientClosed("holdfast client is closed")
            if self._conn is None or self._conn.broken is not None:
                if self._conn is not None:
                    await self._conn.close()
                    log.info("holdfast: reconnecting to %s", self.socket_path)
                self._conn = await self._connect()
            return self._conn

    async def _connect(self) -> _AsyncConnection:
        # Retried by the caller's deadline (wait_for around the whole call).
        attempt = 0
        while True:
            try:
                r, w = await asyncio.wait_for(asyncio.open_unix_connection(self.socket_path),
                                              self.connect_timeout)
                return _AsyncConnection(r, w)
            except PermissionError as exc:
                raise PermissionDenied(f"cannot connect to holdfastd at {self.socket_path}: {exc}") from exc
            except (OSError, asyncio.TimeoutError) as exc:
                self._last_connect_error = exc
                await asyncio.sleep(m.reconnect_delay(attempt, random.random()))
                attempt += 1

    async def _run(self, call: "m.Call[T]", timeout: Optional[float],
                   correlation_id: Optional[str], traceparent: Optional[str] = None) -> T:
        """Send one request and wait for its answer: the API's value for it."""
        result, _, _ = await self._call_on(call, timeout, correlation_id, traceparent)
        return call.result(result)

    async def _call_on(self, call: "m.Call[Any]", timeout: Optional[float],
                       correlation_id: Optional[str], traceparent: Optional[str] = None
                       ) -> Tuple[Any, pb.Response, _AsyncConnection]:
        """Send one request and wait for its answer: (result message, response,
        the connection that carried it)."""
        seconds = call.seconds(timeout, self.timeout)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        req = m.envelope(call.method, call.msg, correlation_id, seconds, traceparent)
        self._last_connect_error = None
        try:
            conn = self._conn
            if conn is not None and conn.broken is None and not self._closed:
                # Connected: no task of its own for the call (the wait_for
                # below costs one, and event-loop turns).
                got = await self._fast_roundtrip(conn, req, deadline, seconds)
                if got is not None:
                    return m.result_of(got, call.method), got, conn
            try:
                resp, conn = await asyncio.wait_for(self._roundtrip(req, deadline), seconds)
            except asyncio.TimeoutError:
                if self._last_connect_error is not None and (self._conn is None or self._conn.broken):
                    raise Unavailable(f"cannot connect to holdfastd at {self.socket_path}: "
                                      f"{self._last_connect_error}") from None
                raise DeadlineExceeded(f"no answer from holdfastd within {seconds:g}s") from None
        except HoldfastError as exc:
            if not exc.correlation_id:
                exc.correlation_id = req.correlation_id
            raise
        return m.result_of(resp, call.method), resp, conn

    async def _fast_roundtrip(self, conn: _AsyncConnection, req: pb.Request, deadline: float,
                              seconds: float) -> Optional[pb.Response]:
        """The call on the open connection `conn`, its deadline kept by a timer
        on the answer's future. None when the request could not go out (it
        did not reach the daemon): the caller then takes the general way."""
        loop = asyncio.get_running_loop()
        req.id = self._next_id()
        req.timeout_ms = m.timeout_ms(max(0.001, deadline - loop.time()))
        try:
            fut = conn.send(req.id, encode_request(req))
        except Unavailable as exc:
            if getattr(exc, "unsent", False):
                return None
            raise
        timer = loop.call_at(deadline, _expire, fut, seconds)
        try:
            if conn.buffered():
                await asyncio.wait_for(conn.drain(), max(0.0, deadline - loop.time()))
            return await fut
        except asyncio.TimeoutError:
            raise DeadlineExceeded(f"no answer from holdfastd within {seconds:g}s") from None
        except Unavailable as exc:
            if type(exc) is Unavailable:
                exc.message += " (the outcome of this call is unknown)"
            raise
        finally:
            timer.cancel()
            conn.forget(req.id)  # a late answer after a deadline is dropped

    async def _roundtrip(self, req: pb.Request,
                         deadline: float) -> Tuple[pb.Response, _AsyncConnection]:
        for attempt in (1, 2):
            conn = await self._connection()
            req.id = self._next_id()
            req.timeout_ms = m.timeout_ms(max(0.001, deadline - asyncio.get_running_loop().time()))
            try:
                fut = conn.send(req.id, encode_request(req))
                break
            except Unavailable as exc:
                # Resend once on a fresh connection, only when the daemon
                # cannot have seen the request.
                if attempt == 2 or not getattr(exc, "unsent", False):
                    raise
        try:
            await conn.drain()
            return await fut, conn
        except Unavailable as exc:
            if type(exc) is Unavailable:
                exc.message += " (the outcome of this call is unknown)"
            raise
        finally:
            conn.forget(req.id)  # a late answer after a deadline is dropped

    # ---- API (mirrors Client) --------------------------------------------

    @property
    def admin(self) -> AsyncAdmin:
        """The operator's calls (set_capacity, set_default_capacity), awaited."""
        return self._admin

    def hold(self, namespace: str, partition: str, target: m.TargetLike, *, ttl_ms: int = 0,
             session: bool = False, on_lost: "Optional[Callable[[AsyncHold], None]]" = None,
             wait: Optional[float] = None, timeout: Optional[float] = None,
             correlation_id: Optional[str] = None, traceparent: Optional[str] = None,
             segment: Optional[m.SegmentLike] = None) -> "_HoldCall":
        """`h = await client.hold(...)`, or `async with client.hold(...) as h:`
        which releases on exit. As Client.hold; on_lost runs on the event loop
        (a plain function, not a coroutine)."""
        target = m.as_target(target, segment)
        call = m.hold_call(namespace, partition, target, ttl_ms, session=session, wait=wait)
        return _HoldCall(self._hold(call, namespace, partition, target, session, on_lost,
                                    timeout, correlation_id or m.new_correlation_id(),
                                    traceparent))

    async def _hold(self, call, namespace, partition, target, session, on_lost, timeout, cid,
                    traceparent) -> "AsyncHold":
        r, resp, conn = await self._call_on(call, timeout, cid, traceparent)
        h = AsyncHold(self, namespace, partition, target, r.token, r.fence, r.ttl_ms, cid,
                      degraded=resp.degraded)
        if session and not resp.degraded:
            h._bind_session(conn.sessions, on_lost)
        return h

    def resume(self, namespace: str, partition: str, target: m.TargetLike, token: str, *,
               correlation_id: Optional[str] = None) -> "AsyncHold":
        """As Client.resume (no call to the daemon, so not awaited)."""
        return AsyncHold(self, namespace, partition, target, token, m.token_fence(token),
                         correlation_id=correlation_id)

    async def cancel(self, namespace: str, partition: str, target: m.TargetLike, *,
                     idempotency_key: str, reference: str = "", timeout: Optional[float] = None,
                     correlation_id: Optional[str] = None, traceparent: Optional[str] = None,
                     segment: Optional[m.SegmentLike] = None) -> m.CancelResult:
        return await self._run(m.cancel_call(namespace, partition, m.as_target(target, segment),
                                             idempotency_key, reference),
                               timeout, correlation_id, traceparent)

    async def status(self, namespace: str, partition: str, target: m.TargetLike, *,
                     token: Optional[str] = None, timeout: Optional[float] = None,
                     correlation_id: Optional[str] = None, traceparent: Optional[str] = None,
                     segment: Optional[m.SegmentLike] = None) -> m.StatusResult:
        return await self._run(m.status_call(namespace, partition, m.as_target(target, segment),
                                             token),
                               timeout, correlation_id, traceparent)

    async def get_capacity(self, namespace: str, partition: str, pools: Iterable[str] = (), *,
                           timeout: Optional[float] = None,
                           correlation_id: Optional[str] = None,
                           traceparent: Optional[str] = None) -> m.Capacities:
        return await self._run(m.get_capacity_call(namespace, partition, pools),
                               timeout, correlation_id, traceparent)

    async def health(self, *, timeout: Optional[float] = None,
                     correlation_id: Optional[str] = None,
                     traceparent: Optional[str] = None) -> m.Health:
        return await self._run(m.health_call(), timeout, correlation_id, traceparent)

    async def metrics(self, *, timeout: Optional[float] = None,
                      correlation_id: Optional[str] = None,
                      traceparent: Optional[str] = None) -> str:
        return await self._run(m.metrics_call(), timeout, correlation_id, traceparent)


class _HoldCall:
    """What AsyncClient.hold returns: await it, or use it with `async with`."""

    def __init__(self, coro: "Coroutine[Any, Any, AsyncHold]") -> None:
        self._coro = coro
        self._hold: Optional[AsyncHold] = None

    def __await__(self) -> "Generator[Any, None, AsyncHold]":
        return self._coro.__await__()

    async def __aenter__(self) -> "AsyncHold":
        self._hold = await self._coro
        return self._hold

    async def __aexit__(self, exc_type, exc, tb) -> None:
        assert self._hold is not None
        await self._hold.__aexit__(exc_type, exc, tb)


class AsyncHold(m.HoldBase):
    """A granted hold of seats or units (asyncio). Same contract as Hold; the
    token never appears in repr/str."""

    _client: AsyncClient

    async def _run(self, call: "m.Call[T]", timeout: Optional[float],
                   traceparent: Optional[str]) -> T:
        return await self._client._run(call, timeout, self.correlation_id, traceparent)

    async def extend(self, ttl_ms: int = 0, *, timeout: Optional[float] = None,
                     traceparent: Optional[str] = None) -> int:
        """Stretch the hold's TTL; returns the TTL applied (ms)."""
        self.ttl_ms = await self._run(m.extend_call(self.namespace, self.partition, self.target,
                                                    self._token, ttl_ms), timeout, traceparent)
        return self.ttl_ms

    async def release(self, *, timeout: Optional[float] = None,
                      traceparent: Optional[str] = None) -> int:
        """Give the hold back; returns how many ids (legs; pools: units) were released."""
        n = await self._run(m.release_call(self.namespace, self.partition, self.target,
                                           self._token), timeout, traceparent)
        self._finished()
        return n

    async def confirm(self, idempotency_key: str, *, reference: str = "", payload: bytes = b"",
                      timeout: Optional[float] = None,
                      traceparent: Optional[str] = None) -> m.ConfirmResult:
        """As Hold.confirm."""
        res = await self._run(m.confirm_call(self.namespace, self.partition, self.target,
                                             self._token, idempotency_key, reference, payload),
                              timeout, traceparent)
        self._finished()
        return res

    async def status(self, *, timeout: Optional[float] = None,
                     traceparent: Optional[str] = None) -> m.StatusResult:
        return await self._run(m.status_call(self.namespace, self.partition, self.target,
                                             self._token), timeout, traceparent)

    async def __aenter__(self) -> "AsyncHold":
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        if not self._active:
            return
        try:
            await self.release()
        except HoldfastError as err:
            m.scope_exit_failed(self, err, body_raised=exc_type is not None)
