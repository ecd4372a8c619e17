"""Journey segments on the wire (docs/segments.md), against a scripted socket:
every call carries the segment of its target, Seats(ids, segment), a Hold
carries its own to its extend, release, confirm, status and scope exit, and
calls without one leave the field unset. The daemon's side is in
test_live_segments.py."""

import asyncio
import shutil
import tempfile
from pathlib import Path

import pytest

from holdfast import AsyncClient, Client, Seats, Segment
from holdfast._targets import as_segment

from fakedaemon import FakeDaemon


@pytest.fixture
def daemon():
    d = tempfile.mkdtemp(prefix="hf-s-")
    fake = FakeDaemon(str(Path(d) / "hf.sock")).start()
    yield fake
    fake.stop()
    shutil.rmtree(d, ignore_errors=True)


def segments(daemon):
    """(method, (from_stop, to_stop) or None) of every request the daemon got."""
    out = []
    for r in daemon.requests:
        which = r.WhichOneof("method")
        msg = getattr(r, which)
        seg = (msg.segment.from_stop, msg.segment.to_stop) if msg.HasField("segment") else None
        out.append((which, seg))
    return out


def test_segment_values():
    assert as_segment(None) is None
    assert as_segment((0, 2)) == Segment(0, 2)
    assert as_segment([3, 5]) == Segment(3, 5)
    s = Segment(1, 3)
    assert as_segment(s) is s
    assert list(s.legs()) == [1, 2]
    assert s.resource_ids(["E7", "E8"]) == ["E7@1", "E7@2", "E8@1", "E8@2"]
    for bad in ((1,), (1, 2, 3), "0-2", 2):
        with pytest.raises(TypeError):
            as_segment(bad)
    with pytest.raises(TypeError):
        Segment(0, "2")
    with pytest.raises(TypeError):
        Segment(True, 2)
    with pytest.raises(ValueError):
        Segment(-1, 2)
    with pytest.raises(ValueError):
        Segment(0, 2**32)


def test_seats_values():
    s = Seats(["E7", "E8"], (0, 2))
    assert s.ids == ("E7", "E8") and s.segment == Segment(0, 2)
    assert s == Seats(("E7", "E8"), Segment(0, 2)) and hash(s) == hash(Seats(["E7", "E8"], (0, 2)))
    assert repr(s) == "Seats(['E7', 'E8'], segment=(0, 2))" and repr(Seats(["E7"])) == "Seats(['E7'])"
    assert Seats(["E7"]).segment is None
    for bad in ("E7", b"E7", {"adult": 2}):
        with pytest.raises(TypeError):
            Seats(bad)


def test_a_hold_carries_its_segment_to_every_call(daemon):
    with Client(daemon.path) as c:
        with c.hold("train", "ktx", Seats(["E7"], (0, 2))) as h:
            assert h.target == Seats(["E7"], Segment(0, 2))
            assert "segment=(0, 2)" in repr(h) and h.token not in repr(h)
            h.extend(1000)
            h.status()
        # scope exit released legs 0..1
        h2 = c.hold("train", "ktx", Seats(["E7"], Segment(2, 4)))
        h2.confirm("k-1", reference="order-1")
        c.cancel("train", "ktx", Seats(["E7"], (2, 4)), idempotency_key="r-1",
                 reference="order-1")
        c.status("train", "ktx", Seats(["E7"], (0, 4)))
        resumed = c.resume("train", "ktx", Seats(["E7"], (5, 6)), "1.fake")
        resumed.release()
        resumed.extend()
        resumed.confirm("k-2")
    assert segments(daemon) == [
        ("hold", (0, 2)), ("extend", (0, 2)), ("status", (0, 2)), ("release", (0, 2)),
        ("hold", (2, 4)), ("confirm", (2, 4)), ("cancel", (2, 4)), ("status", (0, 4)),
        ("release", (5, 6)), ("extend", (5, 6)), ("confirm", (5, 6)),
    ]


def test_no_segment_leaves_the_field_unset(daemon):
    with Client(daemon.path) as c:
        with c.hold("seat", "run-1", ["E7"]) as h:
            assert h.target.segment is None and "segment" not in repr(h)
            h.extend(1000)
            h.confirm("k-3")
        c.cancel("seat", "run-1", Seats(["E7"]), idempotency_key="r-3", reference="k-3")
        c.status("seat", "run-1", ["E7"])
    assert [seg for _, seg in segments(daemon)] == [None] * 5


def test_async_hold_carries_its_segment(daemon):
    async def main():
        async with AsyncClient(daemon.path) as c:
            async with c.hold("train", "ktx", Seats(["E7"], (3, 6))) as h:
                assert h.target.segment == Segment(3, 6)
                await h.extend(1000)
                await h.status()
            h2 = await c.hold("train", "ktx", Seats(["E8"], (0, 1)))
            await h2.confirm("k-4")
            await c.cancel("train", "ktx", Seats(["E8"], (0, 1)), idempotency_key="r-4",
                           reference="")
            await c.status("train", "ktx", Seats(["E8"], (0, 1)))

    asyncio.run(main())
    assert segments(daemon) == [
        ("hold", (3, 6)), ("extend", (3, 6)), ("status", (3, 6)), ("release", (3, 6)),
        ("hold", (0, 1)), ("confirm", (0, 1)), ("cancel", (0, 1)), ("status", (0, 1)),
    ]
