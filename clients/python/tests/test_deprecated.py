"""The deprecated names (protos/contract/surface/python.json `deprecated`),
kept for one release: each warns, and sends byte for byte what its
replacement sends, against a scripted socket; old answers keep their old
shape (pool_status a list, a StatusResult still iterable as one)."""

import asyncio
import shutil
import tempfile
from pathlib import Path

import pytest

import holdfast
from holdfast import (AsyncClient, Client, ConfirmResult, Hold, PoolStatus, ResourceStatus, Seats,
                      Units)

from fakedaemon import FakeDaemon, ok_for


def answers(req):
    resp = ok_for(req)
    which = req.WhichOneof("method")
    if which == "status":
        for i in req.status.ids:
            resp.status.resources.add(id=i, state=1)
        for p in req.status.pools:
            resp.status.pools.add(pool=p, capacity=10)
    elif which == "confirm":
        resp.confirm.units.extend(req.confirm.units)
    return resp


@pytest.fixture
def daemon():
    d = tempfile.mkdtemp(prefix="hf-d-")
    fake = FakeDaemon(str(Path(d) / "hf.sock"), answers).start()
    yield fake
    fake.stop()
    shutil.rmtree(d, ignore_errors=True)


def wire(requests):
    """What each request asked for, without its envelope (id, deadline, ids)."""
    return [(r.WhichOneof("method"), getattr(r, r.WhichOneof("method")).SerializeToString())
            for r in requests]


def old(fn, *args, **kwargs):
    with pytest.warns(DeprecationWarning, match="deprecated"):
        return fn(*args, **kwargs)


SEG = Seats(["E7", "E8"], (0, 2))


def test_old_seat_calls_send_what_the_new_ones_send(daemon):
    with Client(daemon.path) as c:
        c.hold("train", "ktx", SEG, ttl_ms=1000)
        h = c.resume("train", "ktx", SEG, "1.t")
        h.extend(1000)
        h.release()
        h.confirm("k", reference="r")
        c.status("train", "ktx", SEG, token="1.t")
        c.cancel("train", "ktx", SEG, idempotency_key="c", reference="r")
        n = len(daemon.requests)
        ids, seg = ["E7", "E8"], (0, 2)
        old(c.hold, "train", "ktx", ids, ttl_ms=1000, segment=seg)
        old(c.extend, "train", "ktx", ids, "1.t", ttl_ms=1000, segment=seg)
        assert old(c.release, "train", "ktx", ids, "1.t", segment=seg) == 2
        assert isinstance(old(c.confirm, "train", "ktx", ids, "1.t", idempotency_key="k",
                              reference="r", segment=seg), ConfirmResult)
        old(c.status, "train", "ktx", ids, token="1.t", segment=seg)
        old(c.cancel, "train", "ktx", ids, idempotency_key="c", reference="r", segment=seg)
    assert wire(daemon.requests[n:]) == wire(daemon.requests[:n])


def test_old_pool_calls_send_what_the_new_ones_send(daemon):
    U = {"adult": 2, "child": 1}
    with Client(daemon.path) as c:
        c.hold("ga", "show", Units(U), ttl_ms=1000, wait=0.5)
        h = c.resume("ga", "show", Units(["adult", "child"]), "1.t")
        h.extend(1000)
        h.release()
        c.resume("ga", "show", Units(U), "1.t").confirm("k", reference="r", payload=b"x")
        c.cancel("ga", "show", Units({"adult": 1}), idempotency_key="c", reference="r")
        new_status = c.status("ga", "show", Units(["adult"]), token="1.t")
        c.admin.set_capacity("ga", "show", "adult", 5)
        c.admin.set_default_capacity("ga", "show", 1)
        n = len(daemon.requests)
        held = old(c.hold_units, "ga", "show", U, ttl_ms=1000, wait=0.5)
        assert isinstance(held, Hold) and old(getattr, held, "units") == U
        assert old(getattr, held, "pools") == ("adult", "child")
        old(c.extend_units, "ga", "show", ["adult", "child"], "1.t", ttl_ms=1000)
        old(c.release_units, "ga", "show", ["adult", "child"], "1.t")
        sold = old(c.confirm_units, "ga", "show", U, "1.t", idempotency_key="k", reference="r",
                   payload=b"x")
        assert sold.units == U
        old(c.cancel_units, "ga", "show", {"adult": 1}, idempotency_key="c", reference="r")
        statuses = old(c.pool_status, "ga", "show", ["adult"], token="1.t")
        assert statuses == list(new_status.pools) and isinstance(statuses[0], PoolStatus)
        old(c.set_capacity, "ga", "show", "adult", 5)
        old(c.set_default_capacity, "ga", "show", 1)
    assert wire(daemon.requests[n:]) == wire(daemon.requests[:n])


def test_old_async_calls_send_what_the_new_ones_send(daemon):
    async def main():
        async with AsyncClient(daemon.path) as c:
            async with c.hold("ga", "show", Units({"adult": 1})):
                pass
            await c.resume("ga", "show", Units({"adult": 1}), "1.t").confirm("k")
            [st] = (await c.status("ga", "show", Units(["adult"]))).pools
            await c.admin.set_capacity("ga", "show", "adult", 5)
            n = len(daemon.requests)
            async with old(c.hold_units, "ga", "show", {"adult": 1}):
                pass
            await old(c.confirm_units, "ga", "show", {"adult": 1}, "1.t", idempotency_key="k")
            assert await old(c.pool_status, "ga", "show", ["adult"]) == [st]
            await old(c.set_capacity, "ga", "show", "adult", 5)
            return n

    n = asyncio.run(main())
    assert wire(daemon.requests[n:]) == wire(daemon.requests[:n])


def test_old_hold_members_read_the_target(daemon):
    with Client(daemon.path) as c:
        h = c.hold("train", "ktx", SEG)
        assert old(getattr, h, "ids") == ("E7", "E8")
        assert old(getattr, h, "segment") == holdfast.Segment(0, 2)
        with pytest.raises(AttributeError):  # a hold of seats has no units, as before
            old(getattr, h, "units")


def test_old_type_names_are_the_new_types():
    with pytest.warns(DeprecationWarning, match="holdfast.PoolHold is deprecated"):
        from holdfast import PoolHold
    assert PoolHold is Hold
    with pytest.warns(DeprecationWarning):
        assert holdfast.PoolConfirmResult is ConfirmResult
    with pytest.raises(AttributeError):
        holdfast.NoSuchName


def test_a_status_result_still_reads_as_the_old_list(daemon):
    with Client(daemon.path) as c:
        st = c.status("seat", "p", ["E7", "E8"])
        assert [s.id for s in old(iter, st)] == ["E7", "E8"]
        assert old(len, st) == 2 and isinstance(old(st.__getitem__, 0), ResourceStatus)
        (one,) = old(list, c.resume("ga", "p", Units(["adult"]), "1.t").status())
        assert isinstance(one, PoolStatus)


def test_segment_keyword_with_a_target_is_refused():
    with Client("/nonexistent/holdfast.sock") as c:
        with pytest.raises(TypeError), pytest.warns(DeprecationWarning):
            c.hold("train", "ktx", SEG, segment=(0, 2))
