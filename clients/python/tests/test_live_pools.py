"""Pools against the real daemon (docs/pools.md): the test stack's `ga`
namespace (tools/devstack.sh) is of kind "pools", confirmable, with
PostgreSQL; every test sets the capacities of a partition of its own."""

import asyncio
import uuid

import pytest

from holdfast import (AsyncClient, AsyncHold, Client, Confirmed, FailedPrecondition,
                      HeldByAnother, Hold, InvalidArgument, NotFound, NotHeld, PoolCapacity,
                      PoolStatus, Units)

pytestmark = pytest.mark.live

NS = "ga"


def key(name):
    return f"{name}-{uuid.uuid4().hex[:12]}"


def by_pool(result):
    return {s.pool: s for s in result.pools}


@pytest.fixture(autouse=True)
def pools_namespace(client):
    """The stack has `ga` only with PostgreSQL (devstack.sh adds it then)."""
    try:
        client.get_capacity(NS, "probe")
    except NotFound as exc:
        pytest.skip(f"the test stack has no pools namespace {NS!r}: {exc}")


def test_capacity_set_and_get(client, partition):
    admin = client.admin
    assert admin.set_capacity(NS, partition, "adult", 5) == PoolCapacity("adult", 5, 0, False)
    admin.set_capacity(NS, partition, "child", 2)
    caps = client.get_capacity(NS, partition, ["adult", "child", "user-17"])
    assert caps.default_capacity == 0
    assert caps.get("adult") == PoolCapacity("adult", 5, 0, False)
    assert caps.get("child").capacity == 2
    assert caps.get("user-17").partition_default and caps.get("user-17").capacity == 0
    assert caps.get("nope") is None

    d = admin.set_default_capacity(NS, partition, 1)
    assert d.partition_default and d.capacity == 1
    caps = client.get_capacity(NS, partition, ["user-17"])
    assert caps.default_capacity == 1
    assert caps.get("user-17") == PoolCapacity("user-17", 1, 0, True)

    # Raised and lowered freely while nothing is sold; never below what is sold.
    assert admin.set_capacity(NS, partition, "child", 1).capacity == 1
    with client.hold(NS, partition, Units({"child": 1}), ttl_ms=30000) as h:
        h.confirm(key("cap"), reference="order-cap")
    with pytest.raises(FailedPrecondition) as ei:
        admin.set_capacity(NS, partition, "child", 0)
    assert ei.value.field == "capacity" and ei.value.resource_id == "child"
    assert client.get_capacity(NS, partition, ["child"]).get("child") == \
        PoolCapacity("child", 1, 1, False)


def test_hold_of_units_round_trip_and_scope_exit(client, stack, partition):
    client.admin.set_capacity(NS, partition, "adult", 10)
    client.admin.set_capacity(NS, partition, "child", 5)
    with client.hold(NS, partition, Units({"adult": 2, "child": 1}), ttl_ms=5000) as h:
        stack.tokens.append(h.token)
        assert isinstance(h, Hold) and h.active
        assert h.target == Units({"adult": 2, "child": 1})
        assert h.fence > 0 and h.token.startswith(f"{h.fence}.") and h.ttl_ms == 5000
        assert h.token not in repr(h) and "Units({'adult': 2, 'child': 1})" in repr(h)
        assert h.extend(20000) == 20000
        st = by_pool(h.status())
        assert st["adult"].owned == 2 and st["child"].owned == 1
        assert 5000 < st["adult"].ttl_ms <= 20000
    # Leaving the block gave the units back.
    st = by_pool(client.status(NS, partition, Units(["adult", "child"])))
    assert (st["adult"].held, st["adult"].free, st["child"].held) == (0, 10, 0)

    h = client.hold(NS, partition, Units([("adult", 3)]), ttl_ms=5000)
    stack.tokens.append(h.token)
    assert client.resume(NS, partition, Units(["adult"]), h.token).extend(9000) == 9000
    assert h.release() == 3 and not h.active
    with pytest.raises(NotHeld):
        client.resume(NS, partition, Units(["adult"]), h.token).release()


def test_multi_pool_hold_is_all_or_nothing(client, stack, partition):
    client.admin.set_capacity(NS, partition, "adult", 5)
    client.admin.set_capacity(NS, partition, "child", 1)
    first = client.hold(NS, partition, Units({"child": 1}), ttl_ms=30000)
    stack.tokens.append(first.token)
    with Client(stack.socket) as other:
        with pytest.raises(HeldByAnother) as ei:
            other.hold(NS, partition, Units({"adult": 2, "child": 1}), ttl_ms=30000)
    assert ei.value.resource_id == "child"
    # The free adult units were not taken either.
    st = by_pool(client.status(NS, partition, Units(["adult", "child"])))
    assert (st["adult"].held, st["adult"].free) == (0, 5)
    assert (st["child"].held, st["child"].free) == (1, 0)
    first.release()
    with client.hold(NS, partition, Units({"adult": 2, "child": 1}), ttl_ms=30000) as h:
        stack.tokens.append(h.token)


def test_sold_out_answers_confirmed(client, stack, partition):
    client.admin.set_capacity(NS, partition, "child", 1)
    with client.hold(NS, partition, Units({"child": 1}), ttl_ms=30000) as h:
        stack.tokens.append(h.token)
        h.confirm(key("sold"), reference="order-sold")
    with pytest.raises(Confirmed) as ei:
        client.hold(NS, partition, Units({"child": 1}), ttl_ms=30000)
    assert ei.value.resource_id == "child"
    # A pool with no capacity at all is sold out too.
    with pytest.raises(Confirmed) as ei:
        client.hold(NS, partition, Units({"no-capacity": 1}), ttl_ms=30000)
    assert ei.value.resource_id == "no-capacity"


def test_confirm_and_idempotent_replay(client, stack, partition):
    client.admin.set_capacity(NS, partition, "adult", 10)
    client.admin.set_capacity(NS, partition, "child", 5)
    units = {"adult": 2, "child": 1}
    h = client.hold(NS, partition, Units(units), ttl_ms=30000)
    stack.tokens.append(h.token)
    k = key("order")
    first = h.confirm(idempotency_key=k, reference="order-4712", payload=b'{"tickets":3}')
    assert not h.active
    assert first.fence == h.fence and first.units == units and not first.replayed
    assert first.confirmed_at_unix_ms > 0 and first.claims == ()
    again = client.resume(NS, partition, Units(units), h.token).confirm(
        k, reference="order-4712", payload=b'{"tickets":3}')
    assert again.replayed and again.fence == first.fence and again.units == units
    caps = client.get_capacity(NS, partition, ["adult", "child"])
    assert (caps.get("adult").sold, caps.get("child").sold) == (2, 1)
    st = by_pool(client.status(NS, partition, Units(["adult"])))
    assert (st["adult"].sold, st["adult"].held, st["adult"].free) == (2, 0, 8)


def test_confirm_must_name_exactly_the_held_units(client, stack, partition):
    client.admin.set_capacity(NS, partition, "adult", 10)
    with client.hold(NS, partition, Units({"adult": 2}), ttl_ms=30000) as h:
        stack.tokens.append(h.token)
        with pytest.raises(InvalidArgument) as ei:
            client.resume(NS, partition, Units({"adult": 1}), h.token).confirm(
                key("wrong"), reference="r")
        assert ei.value.field.startswith("units")


def test_cancel_gives_units_back(client, stack, partition):
    client.admin.set_capacity(NS, partition, "adult", 3)
    with client.hold(NS, partition, Units({"adult": 3}), ttl_ms=30000) as h:
        stack.tokens.append(h.token)
        h.confirm(key("buy"), reference="order-c")
    with pytest.raises(Confirmed):
        client.hold(NS, partition, Units({"adult": 1}), ttl_ms=30000)

    k = key("refund")
    c = client.cancel(NS, partition, Units({"adult": 1}), idempotency_key=k, reference="order-c")
    assert c.cancelled == 1 and c.units == {"adult": 1} and not c.replayed
    again = client.cancel(NS, partition, Units({"adult": 1}), idempotency_key=k,
                          reference="order-c")
    assert again.replayed and again.cancelled == 1
    assert client.get_capacity(NS, partition, ["adult"]).get("adult").sold == 2
    # More than is sold under the reference: nothing is cancelled.
    with pytest.raises(NotFound) as ei:
        client.cancel(NS, partition, Units({"adult": 3}), idempotency_key=key("too-many"),
                      reference="order-c")
    assert ei.value.resource_id == "adult"
    # The unit given back can be sold again.
    with client.hold(NS, partition, Units({"adult": 1}), ttl_ms=30000) as h2:
        stack.tokens.append(h2.token)


def test_status_shows_held_sold_free_and_this_tokens_units(client, stack, partition):
    client.admin.set_capacity(NS, partition, "adult", 10)
    with client.hold(NS, partition, Units({"adult": 3}), ttl_ms=30000) as sold:
        stack.tokens.append(sold.token)
        sold.confirm(key("s"), reference="order-s")
    a = client.hold(NS, partition, Units({"adult": 2}), ttl_ms=30000)
    with Client(stack.socket) as other:
        b = other.hold(NS, partition, Units({"adult": 1}), ttl_ms=20000)
        stack.tokens += [a.token, b.token]
        result = b.status()
        [st] = result.pools
        assert isinstance(st, PoolStatus) and result.resources == ()
        assert (st.pool, st.capacity, st.sold, st.held, st.free, st.owned) == \
            ("adult", 10, 3, 3, 4, 1)
        assert 0 < st.ttl_ms <= 20000
        [anon] = client.status(NS, partition, Units(["adult"])).pools
        assert (anon.held, anon.owned, anon.ttl_ms) == (3, 0, 0)
        [mine] = client.status(NS, partition, Units(["adult"]), token=a.token).pools
        assert mine.owned == 2
        b.release()
    a.release()


def test_async_pools(stack, partition):
    async def main():
        async with AsyncClient(stack.socket, timeout=5) as c:
            cap = await c.admin.set_capacity(NS, partition, "adult", 4)
            assert cap == PoolCapacity("adult", 4, 0, False)
            assert (await c.admin.set_default_capacity(NS, partition, 1)).capacity == 1
            async with c.hold(NS, partition, Units({"adult": 3, "user-1": 1}),
                              ttl_ms=10000) as h:
                stack.tokens.append(h.token)
                assert isinstance(h, AsyncHold) and h.target.counts == {"adult": 3, "user-1": 1}
                assert await h.extend(15000) == 15000
                st = by_pool(await h.status())
                assert (st["adult"].owned, st["user-1"].owned, st["adult"].free) == (3, 1, 1)
                async with AsyncClient(stack.socket) as other:
                    with pytest.raises(HeldByAnother) as ei:
                        await other.hold(NS, partition, Units({"adult": 2}), ttl_ms=5000)
                    assert ei.value.resource_id == "adult"
                k = key("async")
                res = await h.confirm(k, reference="order-async")
                assert res.units == {"adult": 3, "user-1": 1} and not res.replayed
            assert not h.active
            again = await c.resume(NS, partition, h.target, h.token).confirm(
                k, reference="order-async")
            assert again.replayed
            # One per user: user-1 follows the default of 1, and has it sold.
            with pytest.raises(Confirmed) as ei:
                await c.hold(NS, partition, Units({"adult": 1, "user-1": 1}), ttl_ms=5000)
            assert ei.value.resource_id == "user-1"
            back = await c.cancel(NS, partition, Units({"adult": 1}), idempotency_key=key("ar"),
                                  reference="order-async")
            assert back.units == {"adult": 1}
            caps = await c.get_capacity(NS, partition, ["adult", "user-1"])
            assert (caps.get("adult").sold, caps.get("user-1").sold) == (2, 1)
            assert caps.get("user-1").partition_default and caps.default_capacity == 1
            [st] = (await c.status(NS, partition, Units(["adult"]))).pools
            assert (st.sold, st.held, st.free) == (2, 0, 2)
            h2 = await c.hold(NS, partition, Units({"adult": 2}), ttl_ms=5000)
            stack.tokens.append(h2.token)
            resumed = c.resume(NS, partition, Units(h2.target.pools), h2.token)
            assert await resumed.extend(6000) == 6000
            assert await resumed.release() == 2

    asyncio.run(main())


def test_zz_daemon_log_never_shows_a_pool_token(stack):
    """Runs last in this file: no token of a hold of units is in the log."""
    if stack.dir is None or not (stack.dir / "holdfastd.log").exists():
        pytest.skip("daemon log not available (DIR/holdfastd.log)")
    if not stack.tokens:
        pytest.skip("no live test issued a token in this run")
    text = (stack.dir / "holdfastd.log").read_text(errors="replace")
    assert [t for t in stack.tokens if t in text or t.split(".", 1)[1] in text] == []
