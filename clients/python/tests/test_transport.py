"""Transport behaviour (framing, id matching, deadlines, reconnect, errors)
against a scripted socket peer; see fakedaemon.py for why."""

import asyncio
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest

import holdfast
from holdfast import (AsyncClient, ClientClosed, Client, Code, DeadlineExceeded, HeldByAnother,
                      InvalidArgument, NotHeld, ProtocolError, Unavailable)
from holdfast._gen import holdfast_pb2 as pb

from fakedaemon import FakeDaemon, ok_for

TOKEN = "42.c2VjcmV0LXRva2VuLXZhbHVl"


@pytest.fixture
def sock_path():
    d = tempfile.mkdtemp(prefix="hf-t-")
    yield str(Path(d) / "hf.sock")
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def daemon(sock_path):
    d = FakeDaemon(sock_path).start()
    yield d
    d.stop()


def silent(req):
    return None


def status_echo(req):
    resp = ok_for(req)
    for i in req.status.ids:
        resp.status.resources.add(id=i, state=pb.RESOURCE_STATE_FREE)
    return resp


def test_responses_out_of_order_are_matched_by_id(daemon, sock_path):
    held = []

    def reverse(req):
        held.append(req)
        if len(held) < 2:
            return None
        return [status_echo(held[1]), status_echo(held[0])]

    daemon.handler = reverse
    results = {}
    with Client(sock_path, timeout=5) as c:
        t = threading.Thread(target=lambda: results.setdefault("a", c.status("seat", "p", ["A1"])))
        t.start()
        while not held:
            time.sleep(0.005)
        results["b"] = c.status("seat", "p", ["B1"])
        t.join()
    assert [s.id for s in results["a"].resources] == ["A1"]
    assert [s.id for s in results["b"].resources] == ["B1"]
    assert daemon.connections == 1  # both on one connection


def test_many_threads_share_one_connection(daemon, sock_path):
    errors = []
    with Client(sock_path, timeout=5) as c:
        def worker(n):
            try:
                for k in range(25):
                    got = c.status("seat", "p", [f"R{n}-{k}"])
                    assert [s.id for s in got.resources] == [f"R{n}-{k}"]
            except Exception as exc:  # collected: asserting in threads is lost otherwise
                errors.append(exc)
        daemon.handler = status_echo
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    ids = [r.id for r in daemon.requests]
    assert len(ids) == 200 and len(set(ids)) == 200 and 0 not in ids
    assert daemon.connections == 1


def test_deadline_is_sent_and_enforced_locally(daemon, sock_path):
    daemon.handler = silent
    with Client(sock_path) as c:
        with pytest.raises(DeadlineExceeded) as ei:
            c.health(timeout=0.2, correlation_id="trace-1")
    assert ei.value.code == Code.DEADLINE_EXCEEDED
    assert ei.value.correlation_id == "trace-1"
    req = daemon.requests[0]
    assert 0 < req.timeout_ms <= 200
    assert req.correlation_id == "trace-1"


def test_late_answer_after_deadline_is_dropped(daemon, sock_path):
    late = []

    def first_silent(req):
        if not late:
            late.append(req)
            return None
        return [ok_for(late[0]), ok_for(req)]  # stale answer arrives first

    daemon.handler = first_silent
    with Client(sock_path) as c:
        with pytest.raises(DeadlineExceeded):
            c.health(timeout=0.1)
        h = c.hold("seat", "p", ["E7"], ttl_ms=5000)
        assert h.fence == 1 and h.ttl_ms == 5000


def test_generated_correlation_id_is_sent(daemon, sock_path):
    with Client(sock_path) as c:
        h = c.hold("seat", "p", ["E7"])
    cid = daemon.requests[0].correlation_id
    assert len(cid) == 32 and int(cid, 16) >= 0
    assert h.correlation_id == cid


def test_error_codes_become_typed_exceptions(daemon, sock_path):
    def held(req):
        return pb.Response(id=req.id, correlation_id=req.correlation_id,
                           code=pb.CODE_HELD_BY_ANOTHER, message="resource E8 is held",
                           error=pb.ErrorDetail(resource_id="E8"))

    daemon.handler = held
    with Client(sock_path) as c:
        with pytest.raises(HeldByAnother) as ei:
            c.hold("seat", "p", ["E7", "E8"], correlation_id="t-9")
    e = ei.value
    assert isinstance(e, holdfast.HoldfastError)
    assert e.code == Code.HELD_BY_ANOTHER and e.resource_id == "E8" and e.correlation_id == "t-9"
    assert "HELD_BY_ANOTHER" in str(e) and "E8" in str(e)


def test_unknown_code_still_raises_with_code(daemon, sock_path):
    daemon.handler = lambda req: pb.Response(id=req.id, code=99, message="new code")
    with Client(sock_path) as c:
        with pytest.raises(holdfast.HoldfastError) as ei:
            c.health()
    assert ei.value.code == 99


def test_reconnects_after_daemon_restart(daemon, sock_path):
    with Client(sock_path) as c:
        assert c.health().ready
        daemon.stop()
        daemon.start()
        assert c.health().ready
    assert daemon.connections == 2


def test_call_waits_for_restarting_daemon_within_deadline(daemon, sock_path):
    with Client(sock_path) as c:
        assert c.health().ready
        daemon.stop()
        timer = threading.Timer(0.3, daemon.start)
        timer.start()
        assert c.health(timeout=5).ready
        timer.join()


def test_unreachable_daemon_is_unavailable(sock_path):
    with Client(sock_path) as c:
        with pytest.raises(Unavailable) as ei:
            c.health(timeout=0.2)
    assert sock_path in str(ei.value)


def test_call_in_flight_when_daemon_dies_is_unavailable(daemon, sock_path):
    daemon.handler = silent
    with Client(sock_path) as c:
        threading.Timer(0.1, daemon.stop).start()
        with pytest.raises(Unavailable) as ei:
            c.health(timeout=5)
    assert "unknown" in str(ei.value)


def test_id_zero_rejection_fails_call_and_next_call_reconnects(daemon, sock_path):
    calls = []

    def reject_first(req):
        calls.append(req)
        if len(calls) == 1:
            return pb.Response(id=0, code=pb.CODE_INVALID_ARGUMENT, message="undecodable request frame")
        return ok_for(req)

    daemon.handler = reject_first
    with Client(sock_path) as c:
        with pytest.raises(InvalidArgument):
            c.health()
        daemon.stop()  # the real daemon closes after an id-0 answer
        daemon.start()
        assert c.health().ready


def test_oversized_response_frame_drops_connection(daemon, sock_path):
    daemon.handler = silent
    with Client(sock_path) as c:
        threading.Timer(0.1, daemon.send_raw, args=(b"\xff\xff\xff\xff",)).start()
        with pytest.raises(ProtocolError):
            c.health(timeout=5)


def test_closed_client_gives_clear_error(daemon, sock_path):
    c = Client(sock_path)
    assert c.health().ready
    c.close()
    with pytest.raises(ClientClosed) as ei:
        c.health()
    assert "closed" in str(ei.value)


def test_close_fails_calls_in_flight(daemon, sock_path):
    daemon.handler = silent
    c = Client(sock_path)
    threading.Timer(0.1, c.close).start()
    with pytest.raises(ClientClosed):
        c.health(timeout=5)


def test_hold_context_manager_releases_on_exit(daemon, sock_path):
    with Client(sock_path) as c:
        with c.hold("seat", "p", ["E7", "E8"]) as h:
            assert h.active
        assert not h.active
        with pytest.raises(RuntimeError):
            with c.hold("seat", "p", ["E9"]):
                raise RuntimeError("body failed")
    methods = [r.WhichOneof("method") for r in daemon.requests]
    assert methods == ["hold", "release", "hold", "release"]
    assert list(daemon.requests[1].release.ids) == ["E7", "E8"]
    assert daemon.requests[1].release.token == "1.fake"


def test_hold_exit_ignores_expired_hold(daemon, sock_path):
    def expired(req):
        if req.WhichOneof("method") == "release":
            return pb.Response(id=req.id, code=pb.CODE_NOT_HELD, message="expired")
        return ok_for(req)

    daemon.handler = expired
    with Client(sock_path) as c:
        with c.hold("seat", "p", ["E7"]) as h:
            pass
        assert not h.active
        h2 = c.hold("seat", "p", ["E7"])
        with pytest.raises(NotHeld):
            h2.release()


def test_token_never_in_repr_or_errors(sock_path):
    def grant(req):
        resp = ok_for(req)
        if req.WhichOneof("method") == "hold":
            resp.hold.token = TOKEN
            return resp
        return pb.Response(id=req.id, code=pb.CODE_NOT_HELD, message="hold expired")

    d = FakeDaemon(sock_path, grant).start()
    try:
        with Client(sock_path) as c:
            h = c.hold("seat", "p", ["E7"])
            assert h.token == TOKEN
            assert TOKEN not in repr(h) and TOKEN not in str(h)
            with pytest.raises(NotHeld) as ei:
                h.extend(1000)
            assert TOKEN not in str(ei.value) and TOKEN not in repr(ei.value)
    finally:
        d.stop()


def test_bare_string_ids_are_rejected(daemon, sock_path):
    with Client(sock_path) as c:
        with pytest.raises(TypeError):
            c.hold("seat", "p", "E7")


def test_confirm_requires_idempotency_key(daemon, sock_path):
    with Client(sock_path) as c:
        h = c.hold("seat", "p", ["E7"])
        with pytest.raises(InvalidArgument):
            h.confirm("")


# ---- asyncio ---------------------------------------------------------------

def run(coro):
    return asyncio.run(coro)


def test_async_out_of_order_and_context_manager(daemon, sock_path):
    held = []

    def reverse(req):
        if req.WhichOneof("method") != "status":
            return ok_for(req)
        held.append(req)
        if len(held) < 2:
            return None
        return [status_echo(held[1]), status_echo(held[0])]

    daemon.handler = reverse

    async def main():
        async with AsyncClient(sock_path, timeout=5) as c:
            a, b = await asyncio.gather(c.status("seat", "p", ["A1"]), c.status("seat", "p", ["B1"]))
            assert [s.id for s in a.resources] == ["A1"] and [s.id for s in b.resources] == ["B1"]
            async with c.hold("seat", "p", ["E7"]) as h:
                assert h.active and "1.fake" not in repr(h)
            assert not h.active

    run(main())
    assert [r.WhichOneof("method") for r in daemon.requests][-2:] == ["hold", "release"]


def test_async_deadline_reconnect_and_close(daemon, sock_path):
    async def main():
        c = AsyncClient(sock_path)
        assert (await c.health()).ready
        daemon.handler = silent
        with pytest.raises(DeadlineExceeded):
            await c.health(timeout=0.2)
        daemon.handler = ok_for
        daemon.stop()
        daemon.start()
        assert (await c.health(timeout=5)).ready
        await c.aclose()
        with pytest.raises(ClientClosed):
            await c.health()

    run(main())
    assert daemon.connections == 2


def test_async_unreachable(sock_path):
    async def main():
        async with AsyncClient(sock_path) as c:
            with pytest.raises(Unavailable):
                await c.health(timeout=0.2)

    run(main())


# ---- session holds (docs/sessions.md) ----

def session_event(*lost):
    """An unsolicited id-0 frame: (namespace, partition, fence, reason, resource_id) per hold."""
    ev = pb.Response(id=0, code=pb.CODE_OK, message="session holds were lost")
    for ns, part, fence, reason, rid in lost:
        ev.session_event.lost.add(namespace=ns, partition=part, ids=[rid], fence=fence,
                                  reason=reason, resource_id=rid, message="taken over")
    return ev


def frame(resp):
    body = resp.SerializeToString()
    return len(body).to_bytes(4, "big") + body


def test_session_hold_is_asked_for_and_a_lost_event_reaches_it(daemon, sock_path):
    seen = []
    with Client(sock_path) as c:
        h = c.hold("seat", "p", ["E7"], session=True, on_lost=seen.append)
        plain = c.hold("seat", "p", ["E8"])
        assert daemon.requests[0].hold.session and not daemon.requests[1].hold.session
        assert h.session and h.lost is None and "session=True" in repr(h)
        assert not plain.session
        # An event for another hold first: nothing happens to this one.
        daemon.send_raw(frame(session_event(("seat", "p", 99, pb.CODE_NOT_HELD, "X1"))))
        daemon.send_raw(frame(session_event(("seat", "p", 1, pb.CODE_HELD_BY_ANOTHER, "E7"))))
        deadline = time.monotonic() + 5
        while h.lost is None:
            assert time.monotonic() < deadline, "the lost event did not reach the hold"
            time.sleep(0.005)
        assert isinstance(h.lost, HeldByAnother) and h.lost.resource_id == "E7"
        assert seen == [h]
        assert "lost=HELD_BY_ANOTHER" in repr(h) and "1.fake" not in repr(h)
        # The event is not the end of the stream: the connection stays in use.
        assert c.health().ready
        assert daemon.connections == 1
        # Leaving the scope still sends the (owner-checked) release.
        with h:
            pass
    assert [r.WhichOneof("method") for r in daemon.requests][-1] == "release"


def test_session_event_before_the_caller_has_the_hold_is_kept_for_it(daemon, sock_path):
    def grant_then_lose(req):
        if req.WhichOneof("method") == "hold":
            return [ok_for(req), session_event(("seat", "p", 1, pb.CODE_NOT_HELD, "E7"))]
        return ok_for(req)

    daemon.handler = grant_then_lose
    seen = []
    with Client(sock_path) as c:
        h = c.hold("seat", "p", ["E7"], session=True, on_lost=seen.append)
        assert c.health().ready  # the event was read by now
        assert isinstance(h.lost, NotHeld) and seen == [h]


def test_session_holds_are_lost_with_their_connection(daemon, sock_path):
    fences = iter(range(1, 100))

    def own_fences(req):  # as the daemon: a fence per hold of a partition
        resp = ok_for(req)
        if req.WhichOneof("method") == "hold":
            resp.hold.fence = next(fences)
            resp.hold.token = "%d.fake" % resp.hold.fence
        return resp

    daemon.handler = own_fences
    seen = []
    with Client(sock_path) as c:
        h = c.hold("seat", "p", ["E7"], session=True, on_lost=seen.append)
        released = c.hold("seat", "p", ["E8"], session=True)
        released.release()
        daemon.stop()  # the connection ends: the daemon released (or will expire) the hold
        deadline = time.monotonic() + 5
        while h.lost is None:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        assert isinstance(h.lost, Unavailable) and "connection" in h.lost.message
        assert seen == [h]
        assert released.lost is None  # released through the object: no news for it
        daemon.start()
        assert c.health().ready


def test_session_hold_refuses_a_ttl(daemon, sock_path):
    with Client(sock_path) as c:
        with pytest.raises(InvalidArgument) as ei:
            c.hold("seat", "p", ["E7"], ttl_ms=1000, session=True)
        assert ei.value.field == "ttl_ms"
    assert daemon.requests == []


def test_async_session_hold_lost_event_and_close(daemon, sock_path):
    seen = []

    async def main():
        c = AsyncClient(sock_path, timeout=5)
        h = await c.hold("seat", "p", ["E7"], session=True, on_lost=seen.append)
        assert daemon.requests[-1].hold.session and h.session
        daemon.send_raw(frame(session_event(("seat", "p", 1, pb.CODE_CONFIRMED, "E7"))))
        for _ in range(500):
            if h.lost is not None:
                break
            await asyncio.sleep(0.01)
        assert isinstance(h.lost, holdfast.Confirmed)
        assert (await c.health()).ready
        h2 = await c.hold("seat", "p", ["E8"], session=True)
        await c.aclose()
        assert isinstance(h2.lost, Unavailable)

    run(main())
    assert seen and seen[0].lost.code == Code.CONFIRMED
