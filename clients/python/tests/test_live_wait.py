"""Waiting in line against the real daemon (HoldRequest.wait_ms, issue 11):
a hold with wait=seconds queues behind the holder and is granted when the
holder lets go, or answers HeldByAnother when the wait runs out.

Marked `needs_wait` (conftest.py): these fail against a daemon that does not
wait yet (it answers HeldByAnother at once); HOLDFAST_NO_WAIT=1 skips them."""

import asyncio
import threading
import time

import pytest

from holdfast import AsyncClient, Client, Confirmed, HeldByAnother, ResourceState

pytestmark = [pytest.mark.live, pytest.mark.needs_wait]

NS = "seat"


def test_a_waiting_hold_is_granted_when_the_holder_releases(client, stack, partition):
    a = client.hold(NS, partition, ["E1", "E2"], ttl_ms=30000)
    stack.tokens.append(a.token)
    got = {}
    asked = threading.Event()

    def waiter():
        with Client(stack.socket, timeout=2) as b:
            t0 = time.monotonic()
            asked.set()  # the release comes >= 0.2 s after this
            try:
                with b.hold(NS, partition, ["E2", "E3"], session=True, wait=3.0) as h:
                    got["elapsed"] = time.monotonic() - t0
                    got["hold"] = h
                    stack.tokens.append(h.token)
                    got["status"] = {s.id: (s.state, s.owned) for s in h.status().resources}
            except Exception as exc:  # reported below, in the test's thread
                got["error"] = exc

    t = threading.Thread(target=waiter)
    t.start()
    assert asked.wait(5)
    time.sleep(0.2)
    a.release()
    t.join(10)
    assert "error" not in got, got.get("error")
    h = got["hold"]
    assert h.session and h.fence > a.fence
    assert 0.1 < got["elapsed"] < 3.0, got["elapsed"]
    assert got["status"] == {"E2": (ResourceState.HELD, True), "E3": (ResourceState.HELD, True)}
    assert not h.active  # its scope released it


def test_a_wait_that_runs_out_answers_held_by_another(client, stack, partition):
    a = client.hold(NS, partition, ["E1"], ttl_ms=30000)
    stack.tokens.append(a.token)
    with Client(stack.socket, timeout=5) as b:
        t0 = time.monotonic()
        with pytest.raises(HeldByAnother) as ei:
            b.hold(NS, partition, ["E1", "E4"], wait=0.5)
        elapsed = time.monotonic() - t0
    assert ei.value.resource_id == "E1"
    assert 0.4 < elapsed < 3.0, f"answered after {elapsed:.3f}s: did the daemon wait?"
    # All or nothing: E4 was free and was not taken while waiting.
    assert {s.id: s.state for s in client.status(NS, partition, ["E4"]).resources} == \
        {"E4": ResourceState.FREE}
    a.release()


def test_a_sold_seat_answers_confirmed_without_waiting(client, stack, partition):
    h = client.hold(NS, partition, ["E5"], ttl_ms=30000)
    stack.tokens.append(h.token)
    h.confirm(f"wait-sold-{partition}", reference="order-w")
    t0 = time.monotonic()
    with pytest.raises(Confirmed):
        client.hold(NS, partition, ["E5"], wait=3.0)
    assert time.monotonic() - t0 < 2.0


def test_async_waiting_hold_is_granted_when_the_holder_releases(stack, partition):
    async def main():
        async with AsyncClient(stack.socket, timeout=5) as a, \
                AsyncClient(stack.socket, timeout=2) as b:
            first = await a.hold(NS, partition, ["E6"], ttl_ms=30000)
            stack.tokens.append(first.token)

            async def waiter():
                t0 = asyncio.get_running_loop().time()
                async with b.hold(NS, partition, ["E6"], session=True, wait=3.0) as h:
                    stack.tokens.append(h.token)
                    return h, asyncio.get_running_loop().time() - t0

            task = asyncio.create_task(waiter())
            await asyncio.sleep(0.2)
            if task.done():  # the daemon answered before E6 was released
                pytest.fail(f"answered while E6 was still held: {task.exception() or 'granted'}")
            await first.release()
            h, elapsed = await asyncio.wait_for(task, 5)
            assert h.session and not h.active
            assert 0.1 < elapsed < 3.0

            # And one whose wait runs out.
            again = await a.hold(NS, partition, ["E6"], ttl_ms=30000)
            stack.tokens.append(again.token)
            t0 = asyncio.get_running_loop().time()
            with pytest.raises(HeldByAnother):
                await b.hold(NS, partition, ["E6"], wait=0.4)
            assert asyncio.get_running_loop().time() - t0 > 0.3
            await again.release()

    asyncio.run(main())
