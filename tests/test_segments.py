"""Journey segments: a train seat sold per leg (issue 12).

A namespace with max_legs > 0 sells by leg: every request names a segment
(from_stop, to_stop) and acts on legs from_stop .. to_stop - 1 of each id,
all or nothing. Answers name a leg as "<id>@<leg>"."""
import random
import threading

import pytest

import pgharness as pgh
from harness import Client, code_name, pb

NAMESPACES = pgh.NAMESPACES + """
    train = { default_ttl_ms = 30000, max_ttl_ms = 600000, confirmable = true,
              confirm_window_ms = 30000, max_legs = 8 },
"""


@pytest.fixture
def sdaemon(pgdb, make_daemon):
    return make_daemon(namespaces=NAMESPACES, top_extra=pgdb.config())


@pytest.fixture
def sclient(sdaemon):
    with Client(sdaemon.socket) as c:
        yield c


def seg(a, b):
    return pb().Segment(from_stop=a, to_stop=b)


def hold(c, part, ids, a, b, **kw):
    return c.call(hold=pb().HoldRequest(namespace="train", partition=part, ids=ids,
                                        segment=seg(a, b)), **kw)


def confirm(c, part, ids, a, b, token, key, reference="order"):
    return c.call(confirm=pb().ConfirmRequest(namespace="train", partition=part, ids=ids,
                                              token=token, idempotency_key=key,
                                              reference=reference, segment=seg(a, b)))


def cancel(c, part, ids, a, b, key, reference):
    return c.call(cancel=pb().CancelRequest(namespace="train", partition=part, ids=ids,
                                            idempotency_key=key, reference=reference,
                                            segment=seg(a, b)))


def status(c, part, ids, a, b, token=""):
    r = c.call(status=pb().StatusRequest(namespace="train", partition=part, ids=ids,
                                         token=token, segment=seg(a, b)))
    assert code_name(r.code) == "OK", r
    names = pb().ResourceState.Name
    return {s.id: names(s.state).replace("RESOURCE_STATE_", "") for s in r.status.resources}


def buy(c, part, ids, a, b, key, reference="order"):
    h = hold(c, part, ids, a, b)
    assert code_name(h.code) == "OK", h
    r = confirm(c, part, ids, a, b, h.hold.token, key, reference)
    assert code_name(r.code) == "OK", r
    return r


def test_adjacent_segments_sell_to_two_travellers_and_overlaps_are_refused(pgdb, sclient):
    # Seoul(0) -> Daejeon(2), then Daejeon(2) -> Busan(5): adjacent, no shared leg.
    r = buy(sclient, "ktx-1", ["E7"], 0, 2, "alice", "order-a")
    assert sorted(c.resource_id for c in r.confirm.claims) == ["E7@0", "E7@1"]
    buy(sclient, "ktx-1", ["E7"], 2, 5, "bob", "order-b")
    # 1 -> 3 shares leg 1 with Alice's trip: refused, naming the leg.
    h = hold(sclient, "ktx-1", ["E7"], 1, 3)
    assert code_name(h.code) == "CONFIRMED" and h.error.resource_id == "E7@1", h
    rows = pgdb.query("SELECT resource, reference FROM holdfast.claims"
                      " WHERE partition = 'ktx-1' ORDER BY resource")
    assert rows == [("E7@0", "order-a"), ("E7@1", "order-a"), ("E7@2", "order-b"),
                    ("E7@3", "order-b"), ("E7@4", "order-b")]
    # Per leg: sold on 0..4, free on 5..7.
    st = status(sclient, "ktx-1", ["E7"], 0, 8)
    assert st == {"E7@%d" % k: ("CONFIRMED" if k < 5 else "FREE") for k in range(8)}


def test_an_overlapping_hold_is_held_by_another_naming_the_leg(sclient):
    h = hold(sclient, "ktx-2", ["E1", "E2"], 3, 6)
    assert code_name(h.code) == "OK"
    other = hold(sclient, "ktx-2", ["E2"], 5, 7)
    assert code_name(other.code) == "HELD_BY_ANOTHER" and other.error.resource_id == "E2@5"
    assert code_name(hold(sclient, "ktx-2", ["E2"], 6, 7).code) == "OK"  # adjacent
    st = status(sclient, "ktx-2", ["E1"], 2, 7, token=h.hold.token)
    assert st == {"E1@2": "FREE", "E1@3": "HELD", "E1@4": "HELD", "E1@5": "HELD",
                  "E1@6": "FREE"}


def test_a_confirm_that_meets_a_sold_leg_is_a_conflict_naming_it(pgdb, sclient, redis):
    buy(sclient, "ktx-3", ["A1"], 0, 3, "first")
    # Redis forgets the confirmed markers (a failover to an empty replica).
    redis.cmd("FLUSHALL")
    h = hold(sclient, "ktx-3", ["A1"], 2, 4)
    assert code_name(h.code) == "OK"
    r = confirm(sclient, "ktx-3", ["A1"], 2, 4, h.hold.token, "second")
    assert code_name(r.code) == "CONFLICT" and r.error.resource_id == "A1@2", r
    assert pgdb.value("SELECT count(*) FROM holdfast.claims WHERE idempotency_key = 'second'") \
        == "0"


def test_a_cancel_frees_only_its_legs(pgdb, sclient):
    buy(sclient, "ktx-4", ["B2"], 0, 2, "trip-1", "order-1")
    buy(sclient, "ktx-4", ["B2"], 2, 4, "trip-2", "order-2")
    # Another order's legs are not this cancel's to free: nothing happens.
    r = cancel(sclient, "ktx-4", ["B2"], 1, 3, "refund-x", "order-1")
    assert code_name(r.code) == "CONFLICT" and r.error.resource_id == "B2@2", r
    r = cancel(sclient, "ktx-4", ["B2"], 0, 2, "refund-1", "order-1")
    assert code_name(r.code) == "OK" and r.cancel.cancelled == 2
    st = status(sclient, "ktx-4", ["B2"], 0, 4)
    assert st == {"B2@0": "FREE", "B2@1": "FREE", "B2@2": "CONFIRMED", "B2@3": "CONFIRMED"}
    buy(sclient, "ktx-4", ["B2"], 0, 1, "trip-3", "order-3")


def test_segments_are_validated(sclient):
    cases = [
        (lambda: hold(sclient, "v", ["E1"], 3, 3), "segment"),        # goes nowhere
        (lambda: hold(sclient, "v", ["E1"], 4, 2), "segment"),        # backwards
        (lambda: hold(sclient, "v", ["E1"], 0, 9), "segment"),        # over max_legs (8)
        (lambda: sclient.hold("train", "v", ["E1"]), "segment"),      # missing here
        (lambda: sclient.call(hold=pb().HoldRequest(namespace="seat", partition="v", ids=["1"],
                                                    segment=seg(0, 1))), "segment"),
    ]
    for call, field in cases:
        r = call()
        assert code_name(r.code) == "INVALID_ARGUMENT" and r.error.field == field, r
    # ids x legs count against limits.max_ids (64 by default).
    r = hold(sclient, "v", ["E%d" % i for i in range(9)], 0, 8)
    assert code_name(r.code) == "INVALID_ARGUMENT" and "max_ids" in r.message


def test_forty_clients_racing_random_segments_never_overlap(pgdb, sdaemon):
    """The seed scenario "overlapping seat windows", per leg: random trips on
    one seat; every OK answer has exactly its legs, and no leg is sold twice."""
    answered = []
    lock = threading.Lock()

    def worker(i):
        rnd = random.Random(i)
        with Client(sdaemon.socket) as c:
            for n in range(6):
                a = rnd.randrange(0, 7)
                b = rnd.randrange(a + 1, min(a + 4, 8) + 1)
                h = hold(c, "race", ["S1"], a, b)
                if code_name(h.code) != "OK":
                    continue
                key = "t%d-%d" % (i, n)
                r = confirm(c, "race", ["S1"], a, b, h.hold.token, key, key)
                with lock:
                    answered.append((key, code_name(r.code), a, b))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = pgdb.query("SELECT resource, idempotency_key FROM holdfast.claims"
                      " WHERE ns = 'train' AND partition = 'race'")
    legs = [int(r[0].split("@")[1]) for r in rows]
    assert len(legs) == len(set(legs))  # no leg sold twice (the key says so too)
    ok = [(k, a, b) for k, c, a, b in answered if c == "OK"]
    assert ok, answered
    by_key = {}
    for res, key in rows:
        by_key.setdefault(key, set()).add(int(res.split("@")[1]))
    for key, a, b in ok:
        assert by_key.get(key) == set(range(a, b)), (key, a, b, by_key.get(key))
    assert set(by_key) == {k for k, _, _ in ok}
    assert all(c in ("OK", "CONFLICT", "HOLD_LOST", "CONFIRMED") for _, c, _, _ in answered)
    assert pgdb.value("SELECT count(*) FROM holdfast.idempotency WHERE ns = 'train'"
                      " AND key LIKE 't%' AND code = 'OK'") == str(len(ok))
