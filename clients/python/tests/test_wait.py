"""Waiting in line (HoldRequest.wait_ms, issue 11) on the wire, against a
scripted socket: hold(wait=seconds) sends wait_ms, and the call's deadline
(timeout_ms, and the client's own) is at least the wait plus a margin, so the
client does not give up before the daemon answers. The daemon's side is in
test_live_wait.py."""

import asyncio
import json
import math
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from holdfast import AsyncClient, Client, HeldByAnother, Seats, Units
from holdfast import _model as m
from holdfast._gen import holdfast_pb2 as pb
from holdfast.framing import encode_request

from fakedaemon import FakeDaemon, ok_for

TESTDATA = Path(__file__).resolve().parents[3] / "protos" / "testdata"


@pytest.fixture
def daemon():
    d = tempfile.mkdtemp(prefix="hf-w-")
    fake = FakeDaemon(str(Path(d) / "hf.sock")).start()
    yield fake
    fake.stop()
    shutil.rmtree(d, ignore_errors=True)


def holds(daemon):
    """(wait_ms, timeout_ms) of every hold the daemon got."""
    return [(r.hold.wait_ms, r.timeout_ms) for r in daemon.requests if r.HasField("hold")]


def test_builds_the_golden_waiting_hold_request():
    case = next(c for c in json.loads((TESTDATA / "manifest.json").read_text())
                if c["name"] == "waiting_hold_request")
    call = m.hold_call("seat", "run-2026-12-01-KTX101", ["E7"], 60000, wait=3.0)
    # The client's default 5 s already covers a 3 s wait and its margin.
    seconds = call.seconds(None, m.DEFAULT_TIMEOUT)
    assert seconds == 5.0
    req = m.envelope("hold", call.msg, "wait-1", seconds)
    req.id = 16
    assert encode_request(req) == (TESTDATA / case["file"]).read_bytes()


def test_wait_values():
    assert m.wait_ms(None) == 0 and m.wait_ms(0) == 0
    assert m.wait_ms(0.0001) == 1 and m.wait_ms(2.5) == 2500 and m.wait_ms(3) == 3000
    for bad, exc in (("3", TypeError), (True, TypeError), (-1, ValueError),
                     (math.inf, ValueError), (math.nan, ValueError), (5e6, ValueError)):
        with pytest.raises(exc):
            m.wait_ms(bad)
    call = m.hold_call("seat", "p", ["E7"], wait=10)
    assert call.min_seconds == 10 + m.WAIT_MARGIN
    assert call.seconds(None, 5.0) == 11.0       # the default stretches to the wait
    assert call.seconds(0.5, 5.0) == 11.0        # so does a shorter explicit timeout
    assert call.seconds(30, 5.0) == 30           # a longer one stays
    assert m.hold_call("seat", "p", ["E7"]).seconds(None, 5.0) == 5.0
    assert m.hold_call("seat", "p", ["E7"], wait=0).min_seconds == 0


def test_wait_is_sent_and_stretches_the_deadline(daemon):
    with Client(daemon.path, timeout=2) as c:
        with c.hold("seat", "run-1", ["E7"], session=True, wait=5.0) as h:
            assert h.session
        c.hold("seat", "run-1", ["E8"], wait=0.25)            # within the client's 2 s
        c.hold("seat", "run-1", ["E9"], wait=3, timeout=0.5)  # stretched past 0.5 s
        c.hold("seat", "run-1", ["E10"], wait=1, timeout=10)  # a longer timeout stays
        c.hold("seat", "run-1", ["E11"])                      # no wait: field unset
        c.hold("ga", "show-1", Units({"adult": 2}), wait=4)
        c.hold("train", "ktx", Seats(["E7"], (0, 2)), wait=0.5)
    got = holds(daemon)
    assert [w for w, _ in got] == [5000, 250, 3000, 1000, 0, 4000, 500]
    lower = [6000, 2000, 4000, 10000, 2000, 5000, 2000]
    for (_, t), lo in zip(got, lower):
        assert lo - 300 < t <= lo
    session_hold = daemon.requests[0].hold
    assert session_hold.session and session_hold.ttl_ms == 0
    pool_hold = [r.hold for r in daemon.requests if r.HasField("hold")][5]
    assert [(u.pool, u.count) for u in pool_hold.units] == [("adult", 2)]
    assert not daemon.requests[0].hold.HasField("segment")


def answer_after(seconds, code=pb.CODE_OK):
    def handler(req):
        if req.HasField("hold"):
            time.sleep(seconds)
            if code != pb.CODE_OK:
                return pb.Response(id=req.id, correlation_id=req.correlation_id, code=code,
                                   message="held by another token",
                                   error=pb.ErrorDetail(resource_id=req.hold.ids[0]))
        return ok_for(req)
    return handler


def test_a_waiting_hold_outlives_the_clients_timeout(daemon):
    """The daemon answers after 0.6 s, past the client's 0.3 s timeout, but
    within the wait: the client takes the answer, grant or refusal."""
    daemon.handler = answer_after(0.6)
    with Client(daemon.path, timeout=0.3) as c:
        with c.hold("seat", "run-1", ["E7"], wait=1.0) as h:
            assert h.active
        daemon.handler = answer_after(0.6, pb.CODE_HELD_BY_ANOTHER)
        with pytest.raises(HeldByAnother) as ei:
            c.hold("seat", "run-1", ["E7"], wait=0.5)
        assert ei.value.resource_id == "E7"


def test_async_wait_is_sent_and_outlives_the_timeout(daemon):
    daemon.handler = answer_after(0.6)

    async def main():
        async with AsyncClient(daemon.path, timeout=0.3) as c:
            async with c.hold("seat", "run-1", ["E7"], session=True, wait=1.0) as h:
                assert h.session
            h2 = await c.hold("ga", "show-1", Units({"adult": 1}), wait=0.5)
            await h2.release()

    asyncio.run(main())
    got = holds(daemon)
    assert [w for w, _ in got] == [1000, 500]
    assert 1700 < got[0][1] <= 2000 and 1200 < got[1][1] <= 1500
