"""Pools on the wire (docs/pools.md), without a daemon: the client builds the
golden pool frames of protos/testdata byte for byte, maps the golden answers
to its result types and errors, and a Hold of Units carries its units (or
pools) to every call, against a scripted socket. The daemon's side is in
test_live_pools.py."""

import asyncio
import json
import shutil
import tempfile
from pathlib import Path

import pytest

from holdfast import (AsyncClient, Capacities, CancelResult, Client, ConfirmResult, Confirmed,
                      Conflict, FailedPrecondition, HeldByAnother, PoolCapacity, PoolStatus,
                      StatusResult, Units)
from holdfast import _model as m
from holdfast._gen import holdfast_pb2 as pb

from fakedaemon import FakeDaemon, ok_for

TESTDATA = Path(__file__).resolve().parents[3] / "protos" / "testdata"
CASES = {c["name"]: c for c in json.loads((TESTDATA / "manifest.json").read_text())}


def golden(name, cls):
    msg = cls()
    msg.ParseFromString((TESTDATA / CASES[name]["file"]).read_bytes()[4:])
    return msg


def units_of(takes):
    return {t.pool: t.count for t in takes}


# ---- the golden frames --------------------------------------------------------

def test_builds_the_golden_pool_requests():
    def same(name, call):
        g = golden(name, pb.Request)
        assert call.method == g.WhichOneof("method")
        assert call.msg.SerializeToString() == getattr(g, call.method).SerializeToString()

    ns, p, tok = "ga", "show-2026-12-24-2000", "1764412345678908.Zm9vYmFyYmF6cXV4MTIzNA"
    units = Units({"adult": 2, "child": 1})
    same("pool_hold_request", m.hold_call(ns, p, units, 120000))
    same("pool_extend_request", m.extend_call(ns, p, Units(["adult", "child"]), tok, 300000))
    same("pool_release_request", m.release_call(ns, p, units, tok))
    same("pool_status_request", m.status_call(ns, p, units, tok))
    same("pool_confirm_request", m.confirm_call(ns, p, units, tok, "order-4712:confirm",
                                                "order-4712", b'{"tickets":3}'))
    same("pool_cancel_request", m.cancel_call(ns, p, Units({"adult": 1}),
                                              "order-4712:refund-1", "order-4712"))
    same("set_capacity_request", m.set_capacity_call(ns, p, "adult", 5000))
    same("set_capacity_default_request", m.set_capacity_call("coupon", "batch-7", "", 1,
                                                             partition_default=True))
    same("get_capacity_request", m.get_capacity_call(ns, p, ["adult", "user-17"]))


def test_maps_the_golden_pool_answers():
    r = golden("pool_confirm_response", pb.Response)
    assert m.confirm_result(r.confirm) == ConfirmResult(
        fence=1764412345678908, units={"adult": 2, "child": 1},
        confirmed_at_unix_ms=1764412399456, replayed=False)
    r = golden("pool_cancel_response", pb.Response)
    assert m.cancel_call("ga", "p", Units({"adult": 1}), "k").result(r.cancel) == \
        CancelResult(cancelled=1, units={"adult": 1}, replayed=False)
    r = golden("pool_status_response", pb.Response)
    assert m.status_call("ga", "p", Units(["adult", "child"])).result(r.status) == StatusResult(
        pools=(PoolStatus("adult", 5000, 4990, 7, 3, 2, 118250),
               PoolStatus("child", 500, 500, 1, 0, 1, 118250)))
    r = golden("set_capacity_response", pb.Response)
    assert m.set_capacity_call("ga", "p", "adult", 1).result(r.set_capacity) == \
        PoolCapacity("adult", 5000, 4990, False)
    r = golden("get_capacity_response", pb.Response)
    caps = m.get_capacity_call("ga", "p").result(r.get_capacity)
    assert caps == Capacities((PoolCapacity("adult", 5000, 4990, False),
                               PoolCapacity("user-17", 1, 1, True)), 1)
    assert caps.get("user-17").partition_default and caps.get("child") is None
    hash(caps)  # frozen results stay hashable
    hash(m.confirm_result(golden("pool_confirm_response", pb.Response).confirm))


@pytest.mark.parametrize("name,method,cls,pool", [
    ("pool_hold_response_held_by_another", "hold", HeldByAnother, "adult"),
    ("pool_hold_response_sold_out", "hold", Confirmed, "child"),
    ("pool_confirm_response_sold_out", "confirm", Conflict, "adult"),
    ("set_capacity_response_below_sold", "set_capacity", FailedPrecondition, "adult"),
])
def test_pool_refusals_raise_the_seat_errors(name, method, cls, pool):
    with pytest.raises(cls) as ei:
        m.result_of(golden(name, pb.Response), method)
    assert ei.value.resource_id == pool


# ---- units given by the caller ----------------------------------------------------

def test_units_values():
    u = Units({"adult": 2, "child": 1})
    assert u.pools == ("adult", "child") and u.counts == {"adult": 2, "child": 1}
    assert u == Units([("adult", 2), ("child", 1)]) and hash(u) == hash(Units(u.counts))
    assert Units([("b", 1), ("a", 3)]).pools == ("b", "a")  # the caller's order
    assert repr(u) == "Units({'adult': 2, 'child': 1})"
    names = Units(["adult", "child"])  # names only: extend, release, status
    assert names.pools == ("adult", "child") and names.counts is None
    assert repr(names) == "Units(['adult', 'child'])" and names != u
    for bad in ("adult", b"adult", [("a", 1, 2)], {"a": "2"}, {"a": True}, {1: 2}, {"a": 1.0},
                ["a", ("b", 1)]):
        with pytest.raises(TypeError):
            Units(bad)
    with pytest.raises(ValueError):
        Units({"a": -1})
    with pytest.raises(TypeError):  # hold, confirm and cancel need counts
        m.confirm_call("ga", "p", names, "t", "k")
    with pytest.raises(TypeError):
        m.hold_call("ga", "p", names)
    with pytest.raises(TypeError):  # pool holds have no session
        m.hold_call("ga", "p", u, 0, session=True)
    with pytest.raises(TypeError):  # units are a target of their own, never ids
        m.status_call("ga", "p", {"a": 1})
    for bad in (-1, 1.5, True):
        with pytest.raises((TypeError, ValueError)):
            m.set_capacity_call("ga", "p", "a", bad)


# ---- a hold of units against a scripted socket -------------------------------------

@pytest.fixture
def daemon():
    d = tempfile.mkdtemp(prefix="hf-p-")

    def handler(req):
        resp = ok_for(req)
        which = req.WhichOneof("method")
        if which == "confirm":
            resp.confirm.units.extend(req.confirm.units)
            resp.confirm.fence = 1
        elif which == "release":
            resp.release.released = 3
        elif which == "status":
            for p in req.status.pools:
                resp.status.pools.add(pool=p, capacity=10, owned=1)
        elif which == "set_capacity":
            resp.set_capacity.pool.pool = req.set_capacity.pool
            resp.set_capacity.pool.capacity = req.set_capacity.capacity
        return resp

    fake = FakeDaemon(str(Path(d) / "hf.sock"), handler).start()
    yield fake
    fake.stop()
    shutil.rmtree(d, ignore_errors=True)


def targets(daemon):
    """(method, ids, units, pools) of every request the daemon got."""
    out = []
    for r in daemon.requests:
        which = r.WhichOneof("method")
        msg = getattr(r, which)
        out.append((which,
                    list(getattr(msg, "ids", [])),
                    units_of(msg.units) if hasattr(msg, "units") else None,
                    list(msg.pools) if hasattr(msg, "pools") and which != "set_capacity" else None))
    return out


def test_a_hold_of_units_carries_them_to_every_call(daemon):
    U = {"adult": 2, "child": 1}
    with Client(daemon.path) as c:
        with c.hold("ga", "show-1", Units(U), ttl_ms=60000) as h:
            assert h.target == Units(U) and h.session is False
            assert h.token not in repr(h) and h.token not in str(h)
            assert repr(h).startswith("Hold(namespace='ga', partition='show-1', "
                                      "target=Units({'adult': 2, 'child': 1})")
            h.extend(1000)
            assert [(s.pool, s.owned) for s in h.status().pools] == [("adult", 1), ("child", 1)]
        assert not h.active  # scope exit released the pools
        h2 = c.hold("ga", "show-1", Units([("child", 1)]))
        res = h2.confirm(idempotency_key="k-1", reference="order-1")
        assert res.units == {"child": 1} and res.claims == () and not h2.active
        c.cancel("ga", "show-1", Units({"child": 1}), idempotency_key="r-1", reference="order-1")
        assert c.admin.set_capacity("ga", "show-1", "adult", 7) == \
            PoolCapacity("adult", 7, 0, False)
        c.admin.set_default_capacity("ga", "show-1", 1)
        c.get_capacity("ga", "show-1")
    assert targets(daemon) == [
        ("hold", [], U, None), ("extend", [], None, ["adult", "child"]),
        ("status", [], None, ["adult", "child"]), ("release", [], None, ["adult", "child"]),
        ("hold", [], {"child": 1}, None), ("confirm", [], {"child": 1}, None),
        ("cancel", [], {"child": 1}, None), ("set_capacity", [], None, None),
        ("set_capacity", [], None, None), ("get_capacity", [], None, []),
    ]
    hold = daemon.requests[0].hold
    assert hold.ttl_ms == 60000 and not hold.session and hold.wait_ms == 0
    default = daemon.requests[8].set_capacity
    assert default.partition_default and default.pool == "" and default.capacity == 1
    assert daemon.requests[4].hold.ttl_ms == 0


def test_async_hold_of_units_carries_them(daemon):
    async def main():
        async with AsyncClient(daemon.path) as c:
            async with c.hold("ga", "show-1", Units({"adult": 1})) as h:
                assert h.target.counts == {"adult": 1}
                await h.extend(1000)
                await h.status()
            h2 = await c.hold("ga", "show-1", Units({"child": 2}))
            await h2.confirm("k-2", reference="order-2")
            await c.cancel("ga", "show-1", Units({"child": 1}), idempotency_key="r-2",
                           reference="order-2")
            await c.status("ga", "show-1", Units(["child"]), token=h2.token)
            resumed = c.resume("ga", "show-1", Units(["child"]), h2.token)
            await resumed.extend()
            await resumed.release()
            await c.admin.set_capacity("ga", "show-1", "child", 3)
            await c.get_capacity("ga", "show-1", ["child"])

    asyncio.run(main())
    assert [t[0] for t in targets(daemon)] == [
        "hold", "extend", "status", "release", "hold", "confirm", "cancel", "status", "extend",
        "release", "set_capacity", "get_capacity"]
    assert units_of(daemon.requests[5].confirm.units) == {"child": 2}
    assert list(daemon.requests[7].status.pools) == ["child"]
    assert daemon.requests[7].status.token == "1.fake"
    assert daemon.requests[8].extend.token == "1.fake"
