"""Strings with NUL bytes against the real daemon: it refuses any string field
holding a NUL byte (or invalid UTF-8) with INVALID_ARGUMENT naming the field,
before anything is written. Python strings carry NUL freely and this client
sends them as they are, so the refusal is the daemon's."""

import uuid

import pytest

from holdfast import InvalidArgument, ResourceState

pytestmark = pytest.mark.live

NS = "seat"


def state(client, partition, rid):
    (s,) = client.status(NS, partition, [rid]).resources
    return s.state, s.owned


def test_a_hold_with_a_nul_in_an_id_is_refused_and_takes_nothing(client, partition):
    with pytest.raises(InvalidArgument) as ei:
        client.hold(NS, partition, ["E\x007"], ttl_ms=30000)
    assert ei.value.field == "ids[0]"
    with pytest.raises(InvalidArgument) as ei:
        client.hold(NS, partition, ["F1", "E\x007"], ttl_ms=30000)
    assert ei.value.field == "ids[1]"
    # Not cut at the NUL ("E"), and nothing else of the request taken.
    for rid in ("E", "7", "F1"):
        assert state(client, partition, rid) == (ResourceState.FREE, False)


def test_a_confirm_with_a_nul_in_its_idempotency_key_is_refused(client, stack, partition):
    key = f"order-{uuid.uuid4().hex[:12]}"
    with client.hold(NS, partition, ["E"], ttl_ms=30000) as h:
        stack.tokens.append(h.token)
        with pytest.raises(InvalidArgument) as ei:
            h.confirm(key + "\x00x", reference="order-1")
        assert ei.value.field == "idempotency_key"
        # Nothing written: the seat is still held (not sold), and the key cut at
        # the NUL was never stored (a confirm under it is a first one).
        assert state(client, partition, "E") == (ResourceState.HELD, False)
        assert {(s.state, s.owned) for s in h.status().resources} == {(ResourceState.HELD, True)}
        first = h.confirm(key, reference="order-1")
    assert not first.replayed and [c.resource_id for c in first.claims] == ["E"]


def test_a_cancel_with_a_nul_in_its_reference_is_refused(client, stack, partition):
    key = f"order-{uuid.uuid4().hex[:12]}"
    with client.hold(NS, partition, ["E"], ttl_ms=30000) as h:
        stack.tokens.append(h.token)
        h.confirm(key, reference="order-1")
    refund = f"refund-{uuid.uuid4().hex[:12]}"
    with pytest.raises(InvalidArgument) as ei:
        client.cancel(NS, partition, ["E"], idempotency_key=refund, reference="order-1\x00x")
    assert ei.value.field == "reference"
    assert state(client, partition, "E") == (ResourceState.CONFIRMED, False)
    # The refused cancel stored nothing under its key: the real one is not a replay.
    r = client.cancel(NS, partition, ["E"], idempotency_key=refund, reference="order-1")
    assert r.cancelled == 1 and not r.replayed
    assert state(client, partition, "E") == (ResourceState.FREE, False)
