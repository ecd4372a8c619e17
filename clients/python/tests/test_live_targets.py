"""One surface for every kind of target, against the real daemon: the same
calls (hold -> extend -> status -> confirm -> cancel) and a hold resumed from
its token in a second client, for seats, units of pools (`ga`) and seats on
a journey segment (`train`)."""

import asyncio
import uuid

import pytest

from holdfast import (AsyncClient, Client, ConfirmResult, NotFound, ResourceState, Seats,
                      StatusResult, Units)

pytestmark = pytest.mark.live

TARGETS = {
    "seats": ("seat", Seats(["E7", "E8"])),
    "units": ("ga", Units({"adult": 2, "child": 1})),
    "segment": ("train", Seats(["E7"], (1, 3))),
}


def key(name):
    return f"{name}-{uuid.uuid4().hex[:12]}"


def names(target):
    """What a status answers for: pools, or each id (each leg on a segment)."""
    if isinstance(target, Units):
        return list(target.pools)
    return target.segment.resource_ids(target.ids) if target.segment else list(target.ids)


def held_by_token(result, target):
    assert isinstance(result, StatusResult)
    if isinstance(target, Units):
        return {p.pool: p.owned for p in result.pools} == target.counts
    return {s.id: (s.state, s.owned) for s in result.resources} == \
        {i: (ResourceState.HELD, True) for i in names(target)}


def sold(result, target):
    if isinstance(target, Units):
        return {p.pool: p.sold for p in result.pools} == target.counts
    return {s.id: s.state for s in result.resources} == \
        {i: ResourceState.CONFIRMED for i in names(target)}


def what_it_sold(res, target):
    assert isinstance(res, ConfirmResult)
    if isinstance(target, Units):
        return res.units == target.counts and res.claims == ()
    return sorted(c.resource_id for c in res.claims) == sorted(names(target)) and res.units == {}


def size(target):
    """What a cancel of the whole target gives back: units, or ids (legs)."""
    return sum(target.counts.values()) if isinstance(target, Units) else len(names(target))


def prepare(client, ns, partition, target):
    if isinstance(target, Units):
        try:
            for pool in target.pools:
                client.admin.set_capacity(ns, partition, pool, 10)
        except NotFound as exc:
            pytest.skip(f"the test stack has no pools namespace {ns!r}: {exc}")


@pytest.mark.parametrize("kind", TARGETS)
def test_the_same_calls_for_every_target(kind, client, stack, partition):
    ns, target = TARGETS[kind]
    prepare(client, ns, partition, target)
    h = client.hold(ns, partition, target, ttl_ms=10000)
    stack.tokens.append(h.token)
    assert h.target == target and h.fence > 0 and h.active
    assert h.extend(20000) == 20000
    assert held_by_token(h.status(), target)

    # Another process carries on with the token alone.
    order = f"order-{kind}"
    k = key("confirm")
    with Client(stack.socket, timeout=5) as other:
        resumed = other.resume(ns, partition, target, h.token)
        assert resumed.fence == h.fence and resumed.token == h.token
        assert resumed.extend(30000) == 30000
        assert held_by_token(resumed.status(), target)
        res = resumed.confirm(k, reference=order)
        assert not resumed.active
    assert res.fence == h.fence and not res.replayed and what_it_sold(res, target)
    assert h.confirm(k, reference=order).replayed  # the same key: the stored answer
    assert sold(client.status(ns, partition, target), target)

    ck = key("cancel")
    back = client.cancel(ns, partition, target, idempotency_key=ck, reference=order)
    assert back.cancelled == size(target) and not back.replayed
    assert client.cancel(ns, partition, target, idempotency_key=ck, reference=order).replayed
    with client.hold(ns, partition, target, ttl_ms=5000) as again:  # for sale again
        stack.tokens.append(again.token)
    assert not again.active


@pytest.mark.parametrize("kind", TARGETS)
def test_the_same_calls_for_every_target_async(kind, client, stack, partition):
    ns, target = TARGETS[kind]
    prepare(client, ns, partition, target)

    async def main():
        async with AsyncClient(stack.socket, timeout=5) as a, \
                AsyncClient(stack.socket, timeout=5) as b:
            async with a.hold(ns, partition, target, ttl_ms=10000) as h:
                stack.tokens.append(h.token)
                assert await h.extend(20000) == 20000
                resumed = b.resume(ns, partition, target, h.token)
                assert held_by_token(await resumed.status(), target)
                res = await resumed.confirm(key("async"), reference="order-async")
                assert what_it_sold(res, target)
            # h was confirmed elsewhere: leaving its scope is quiet (CONFIRMED).
            assert sold(await a.status(ns, partition, target), target)
            back = await a.cancel(ns, partition, target, idempotency_key=key("async-cancel"),
                                  reference="order-async")
            assert back.cancelled == size(target)

    asyncio.run(main())
