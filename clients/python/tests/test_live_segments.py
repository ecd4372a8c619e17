"""Journey segments against the real daemon (docs/segments.md): the test
stack's `train` namespace (tools/devstack.sh) has max_legs = 8, so every
request there names a segment and acts on legs from_stop .. to_stop - 1;
answers name a leg "<id>@<leg>"."""

import asyncio
import uuid

import pytest

from holdfast import (AsyncClient, Client, Confirmed, HeldByAnother, InvalidArgument,
                      ResourceState, Seats, Segment)

pytestmark = pytest.mark.live

NS = "train"
FREE, HELD, CONFIRMED = ResourceState.FREE, ResourceState.HELD, ResourceState.CONFIRMED


def legs(client, partition, seat, a, b, token=None):
    return {s.id: s.state
            for s in client.status(NS, partition, Seats([seat], (a, b)), token=token).resources}


def key(name):
    return f"{name}-{uuid.uuid4().hex[:12]}"


def test_adjacent_segments_of_one_seat_sold_to_two_travellers(client, stack, partition):
    # Seoul (0) -> Daejeon (2) for Alice, Daejeon (2) -> Busan (4) for Bob:
    # adjacent trips share no leg.
    with client.hold(NS, partition, Seats(["E7"], (0, 2)), ttl_ms=30000) as alice:
        stack.tokens.append(alice.token)
        assert alice.target == Seats(["E7"], Segment(0, 2))
        assert {s.id: (s.state, s.owned) for s in alice.status().resources} == {
            "E7@0": (HELD, True), "E7@1": (HELD, True)}
        assert alice.extend(60000) == 60000
        with client.hold(NS, partition, Seats(["E7"], Segment(2, 4)), ttl_ms=30000) as bob:
            stack.tokens.append(bob.token)
            a = alice.confirm(key("alice"), reference="order-a")
            b = bob.confirm(key("bob"), reference="order-b")
    assert sorted(c.resource_id for c in a.claims) == ["E7@0", "E7@1"]
    assert sorted(c.resource_id for c in b.claims) == ["E7@2", "E7@3"]
    assert {c.reference for c in a.claims} == {"order-a"}
    assert legs(client, partition, "E7", 0, 6) == {
        "E7@0": CONFIRMED, "E7@1": CONFIRMED, "E7@2": CONFIRMED, "E7@3": CONFIRMED,
        "E7@4": FREE, "E7@5": FREE}


def test_an_overlapping_hold_is_refused_naming_the_leg(client, stack, partition):
    carol = client.hold(NS, partition, Seats(["E7"], (0, 2)), ttl_ms=30000)
    stack.tokens.append(carol.token)
    with Client(stack.socket) as other:
        # 1 -> 3 shares leg 1 with Carol's hold.
        with pytest.raises(HeldByAnother) as ei:
            other.hold(NS, partition, Seats(["E7"], (1, 3)), ttl_ms=30000)
        assert ei.value.resource_id == "E7@1"
        # All or nothing: leg 2 was free and stays free.
        assert legs(client, partition, "E7", 2, 3) == {"E7@2": FREE}
        carol.confirm(key("carol"), reference="order-c")
        with pytest.raises(Confirmed) as ei:
            other.hold(NS, partition, Seats(["E7"], (1, 3)), ttl_ms=30000)
        assert ei.value.resource_id == "E7@1"
        # The trip after hers is still for sale.
        with other.hold(NS, partition, Seats(["E7"], (2, 3)), ttl_ms=30000) as dave:
            stack.tokens.append(dave.token)


def test_a_cancel_frees_only_its_legs(client, stack, partition):
    bought = {}
    for name, seg in (("trip-1", (0, 2)), ("trip-2", (2, 4))):
        with client.hold(NS, partition, Seats(["B2"], seg), ttl_ms=30000) as h:
            stack.tokens.append(h.token)
            h.confirm(key(name), reference=f"order-{name}")
            bought[name] = f"order-{name}"
    # The reference is the one the confirm was made with.
    r = client.cancel(NS, partition, Seats(["B2"], (0, 2)), idempotency_key=key("refund"),
                      reference=bought["trip-1"])
    assert r.cancelled == 2 and not r.replayed
    assert legs(client, partition, "B2", 0, 4) == {
        "B2@0": FREE, "B2@1": FREE, "B2@2": CONFIRMED, "B2@3": CONFIRMED}
    # The freed legs sell again; the other order's legs do not.
    with client.hold(NS, partition, Seats(["B2"], (0, 2)), ttl_ms=30000) as again:
        stack.tokens.append(again.token)
    with pytest.raises(Confirmed) as ei:
        client.hold(NS, partition, Seats(["B2"], (1, 3)), ttl_ms=30000)
    assert ei.value.resource_id == "B2@2"


def test_scope_exit_and_release_act_on_the_holds_legs(client, stack, partition):
    with client.hold(NS, partition, Seats(["C3", "C4"], (5, 8)), ttl_ms=30000) as h:
        stack.tokens.append(h.token)
        assert legs(client, partition, "C4", 4, 8) == {
            "C4@4": FREE, "C4@5": HELD, "C4@6": HELD, "C4@7": HELD}
    assert not h.active  # released on leaving the block, legs 5..7 of both seats
    assert set(legs(client, partition, "C3", 5, 8).values()) == {FREE}
    h2 = client.hold(NS, partition, Seats(["C3"], (0, 3)), ttl_ms=30000)
    stack.tokens.append(h2.token)
    assert h2.release() == 3  # one per leg


def test_segment_is_required_in_a_namespace_with_legs_and_refused_elsewhere(client, partition):
    with pytest.raises(InvalidArgument) as ei:
        client.hold(NS, partition, ["E7"], ttl_ms=30000)
    assert ei.value.field == "segment"
    with pytest.raises(InvalidArgument) as ei:
        client.hold("seat", partition, Seats(["E7"], (0, 1)), ttl_ms=30000)
    assert ei.value.field == "segment"
    with pytest.raises(InvalidArgument) as ei:
        client.hold(NS, partition, Seats(["E7"], (3, 2)), ttl_ms=30000)
    assert ei.value.field == "segment"


def test_async_client_segments(stack, partition):
    async def main():
        async with AsyncClient(stack.socket, timeout=5) as c:
            async with c.hold(NS, partition, Seats(["D1"], (0, 3)), ttl_ms=30000) as h:
                stack.tokens.append(h.token)
                assert [s.id for s in (await h.status()).resources] == ["D1@0", "D1@1", "D1@2"]
                conf = await h.confirm(key("async"), reference="order-async")
            assert sorted(cl.resource_id for cl in conf.claims) == ["D1@0", "D1@1", "D1@2"]
            r = await c.cancel(NS, partition, Seats(["D1"], (0, 3)),
                               idempotency_key=key("async-refund"), reference="order-async")
            assert r.cancelled == 3
            st = await c.status(NS, partition, Seats(["D1"], (0, 3)))
            assert {s.state for s in st.resources} == {FREE}

    asyncio.run(main())
