"""Quantity holds (issue 12): pools with a capacity in PostgreSQL, holds that
take units of one or more pools, all or nothing, against real redis-server,
PostgreSQL and holdfastd.

The races: 200 clients for the last 10 units; multi-pool holds that never
leave a partial take; expired holds giving their units back to the next
caller at once; Redis forgetting everything mid-run while PostgreSQL still
refuses any oversell; a capacity lowered mid-sale; and the coupon batch
(50 users x 4 simultaneous presses on 30 coupons: exactly 30 sold, at most
one per user, through a per-user pool that follows the partition's default
capacity of 1). No assertion depends on timing."""
import random
import threading
import time

import pytest

import harness
import pgharness as pgh
from harness import Client, code_name, pb
from pgharness import lit

NAMESPACES = pgh.NAMESPACES + """
    ga = { kind = "pools", default_ttl_ms = 30000, min_ttl_ms = 10, max_ttl_ms = 600000,
           confirmable = true, confirm_window_ms = 30000 },
    coupon = { kind = "pools", default_ttl_ms = 30000, min_ttl_ms = 10, confirmable = true },
    stock = { kind = "pools", default_ttl_ms = 30000, min_ttl_ms = 10 },
"""


@pytest.fixture
def pdaemon(pgdb, make_daemon):
    return make_daemon(namespaces=NAMESPACES, top_extra=pgdb.config(pool_size=4),
                       limits="max_ids = 8")


@pytest.fixture
def pclient(pdaemon):
    with Client(pdaemon.socket) as c:
        yield c


# --- helpers ---------------------------------------------------------------

def takes(units):
    return [pb().PoolTake(pool=p, count=n) for p, n in units]


def hold(c, ns, part, units, ttl_ms=0, **kw):
    return c.call(hold=pb().HoldRequest(namespace=ns, partition=part, units=takes(units),
                                        ttl_ms=ttl_ms), **kw)


def held(c, ns, part, units, ttl_ms=0):
    r = hold(c, ns, part, units, ttl_ms)
    assert code_name(r.code) == "OK", r.message
    return r.hold.token


def confirm(c, ns, part, units, token, key, reference="", payload=b"", **kw):
    return c.call(confirm=pb().ConfirmRequest(namespace=ns, partition=part, units=takes(units),
                                              token=token, idempotency_key=key,
                                              reference=reference, payload=payload), **kw)


def cancel(c, ns, part, units, key, reference, **kw):
    return c.call(cancel=pb().CancelRequest(namespace=ns, partition=part, units=takes(units),
                                            idempotency_key=key, reference=reference), **kw)


def status(c, ns, part, pools, token=""):
    r = c.call(status=pb().StatusRequest(namespace=ns, partition=part, pools=pools, token=token))
    assert code_name(r.code) == "OK", r.message
    return {p.pool: p for p in r.status.pools}


def set_capacity(c, ns, part, pool, capacity, default=False):
    return c.call(set_capacity=pb().SetCapacityRequest(
        namespace=ns, partition=part, pool=pool, capacity=capacity, partition_default=default))


def capacity_ok(c, ns, part, pool, capacity, default=False):
    r = set_capacity(c, ns, part, pool, capacity, default)
    assert code_name(r.code) == "OK", r.message
    return r


def sold(pgdb, ns, part, pool):
    v = pgdb.value("SELECT sold FROM holdfast.pools WHERE ns = %s AND partition = %s"
                   " AND pool = %s" % (lit(ns), lit(part), lit(pool)))
    return int(v) if v is not None else 0


def claimed_units(pgdb, ns, part, pool):
    """Units sold per the claim rows (minus cancelled): must equal pools.sold."""
    return int(pgdb.value(
        "SELECT coalesce(sum(units - cancelled), 0) FROM holdfast.pool_claim_units"
        " WHERE ns = %s AND partition = %s AND pool = %s" % (lit(ns), lit(part), lit(pool))))


def run_threads(n, target):
    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        assert not t.is_alive(), "a client thread hung"


# --- the basics ------------------------------------------------------------

def test_hold_extend_status_release_and_the_capacity_in_postgres(pgdb, pclient, redis):
    r = capacity_ok(pclient, "ga", "show-1", "adult", 5)
    assert r.set_capacity.pool.capacity == 5 and not r.set_capacity.pool.partition_default
    assert pgdb.query("SELECT pool, capacity, sold FROM holdfast.pools") == [("adult", "5", "0")]

    token = held(pclient, "ga", "show-1", [("adult", 3)])
    s = status(pclient, "ga", "show-1", ["adult"], token)["adult"]
    assert (s.capacity, s.sold, s.held, s.free, s.owned) == (5, 0, 3, 2, 3)
    assert 0 < s.ttl_ms <= 30000
    # Only 2 left: 3 more are refused (held by others), 2 more are fine.
    r = hold(pclient, "ga", "show-1", [("adult", 3)])
    assert code_name(r.code) == "HELD_BY_ANOTHER" and r.error.resource_id == "adult"
    assert "2 free" in r.message
    other = held(pclient, "ga", "show-1", [("adult", 2)])

    r = pclient.call(extend=pb().ExtendRequest(namespace="ga", partition="show-1",
                                               pools=["adult"], token=token, ttl_ms=120000))
    assert code_name(r.code) == "OK" and r.extend.ttl_ms == 120000
    assert 30000 < status(pclient, "ga", "show-1", ["adult"], token)["adult"].ttl_ms <= 120000

    r = pclient.call(release=pb().ReleaseRequest(namespace="ga", partition="show-1",
                                                 pools=["adult"], token=token))
    assert code_name(r.code) == "OK" and r.release.released == 3
    r = pclient.call(release=pb().ReleaseRequest(namespace="ga", partition="show-1",
                                                 pools=["adult"], token=token))
    assert code_name(r.code) == "NOT_HELD" and r.release.released == 0
    s = status(pclient, "ga", "show-1", ["adult"], other)["adult"]
    assert (s.held, s.free, s.owned) == (2, 3, 2)
    # The layout of docs/pools.md.
    assert redis.cmd("HGET", "hf:{ga:show-1}:#pool:adult", other) == "2"
    assert redis.cmd("ZSCORE", "hf:{ga:show-1}:#pexp:adult", other) is not None

    # Raising and lowering; never below what is sold.
    r = pclient.call(get_capacity=pb().GetCapacityRequest(namespace="ga", partition="show-1",
                                                          pools=["adult", "child"]))
    assert code_name(r.code) == "OK"
    got = {p.pool: p for p in r.get_capacity.pools}
    assert got["adult"].capacity == 5 and not got["adult"].partition_default
    assert got["child"].capacity == 0 and got["child"].partition_default
    assert r.get_capacity.default_capacity == 0
    # A pool that has no capacity sells nothing.
    r = hold(pclient, "ga", "show-1", [("child", 1)])
    assert code_name(r.code) == "CONFIRMED" and r.error.resource_id == "child"


def test_requests_are_validated_before_anything_happens(pgdb, pclient, redis):
    capacity_ok(pclient, "ga", "v", "adult", 5)
    before = sorted(redis.cmd("KEYS", "hf:*"))
    cases = [
        (dict(ns="seat"), "INVALID_ARGUMENT", "units"),             # a seats namespace
        (dict(units=[]), "INVALID_ARGUMENT", "units"),
        (dict(units=[("adult", 0)]), "INVALID_ARGUMENT", "units[0].count"),
        (dict(units=[("adult", 1000001)]), "INVALID_ARGUMENT", "units[0].count"),
        (dict(units=[("adult", 1), ("adult", 2)]), "INVALID_ARGUMENT", "units[1].pool"),
        (dict(units=[("a:b", 1)]), "INVALID_ARGUMENT", "units[0].pool"),
        (dict(units=[("{x}", 1)]), "INVALID_ARGUMENT", "units[0].pool"),
        (dict(units=[("p%d" % i, 1) for i in range(9)]), "INVALID_ARGUMENT", "units"),
        (dict(ns="nope"), "NOT_FOUND", "namespace"),
        (dict(partition="a b"), "INVALID_ARGUMENT", "partition"),
        (dict(ttl_ms=5), "INVALID_ARGUMENT", "ttl_ms"),
    ]
    for over, code, field in cases:
        a = dict(ns="ga", partition="v", units=[("adult", 1)], ttl_ms=0)
        a.update(over)
        r = hold(pclient, a["ns"], a["partition"], a["units"], a["ttl_ms"])
        assert code_name(r.code) == code, (over, r.message)
        assert r.error.field == field, (over, r.error)
    # Ids on a pools namespace.
    r = pclient.hold("ga", "v", ["A1"])
    assert code_name(r.code) == "INVALID_ARGUMENT" and r.error.field == "ids"
    r = pclient.call(hold=pb().HoldRequest(namespace="ga", partition="v", ids=["A1"],
                                           units=takes([("adult", 1)])))
    assert code_name(r.code) == "INVALID_ARGUMENT" and r.error.field == "ids"
    # Units are never held by a session: they take a TTL.
    r = pclient.call(hold=pb().HoldRequest(namespace="ga", partition="v",
                                           units=takes([("adult", 1)]), session=True))
    assert code_name(r.code) == "INVALID_ARGUMENT" and r.error.field == "session", r
    # SetCapacity: a pool or the default, a capacity within bounds.
    for kw, field in ((dict(pool=""), "pool"), (dict(pool="a", default=True), "pool"),
                      (dict(pool="a", capacity=10**12 + 1), "capacity"),
                      (dict(pool="a b"), "pool")):
        a = dict(pool="adult", capacity=1, default=False)
        a.update(kw)
        r = set_capacity(pclient, "ga", "v", a["pool"], a["capacity"], a["default"])
        assert code_name(r.code) == "INVALID_ARGUMENT" and r.error.field == field, (kw, r)
    r = set_capacity(pclient, "seat", "v", "adult", 1)
    assert code_name(r.code) == "INVALID_ARGUMENT"
    # Not confirmable: Confirm is refused before anything happens.
    capacity_ok(pclient, "stock", "v", "sku-1", 5)
    token = held(pclient, "stock", "v", [("sku-1", 1)])
    r = confirm(pclient, "stock", "v", [("sku-1", 1)], token, "k")
    assert code_name(r.code) == "FAILED_PRECONDITION"
    assert pgdb.value("SELECT count(*) FROM holdfast.idempotency") == "0"
    assert sorted(set(redis.cmd("KEYS", "hf:*")) - {"hf:{stock:v}:#fence",
                  "hf:{stock:v}:#pool:sku-1", "hf:{stock:v}:#pexp:sku-1",
                  "hf:{stock:v}:#pooldefault"}) == before


def test_confirm_sells_once_replays_and_cancel_gives_units_back(pgdb, pdaemon, pclient, redis):
    capacity_ok(pclient, "ga", "show-2", "adult", 10)
    capacity_ok(pclient, "ga", "show-2", "child", 4)
    units = [("adult", 2), ("child", 1)]
    token = held(pclient, "ga", "show-2", units)
    fence = int(token.split(".")[0])
    # Other units than the token holds: refused, nothing decided.
    r = confirm(pclient, "ga", "show-2", [("adult", 1), ("child", 1)], token, "order-1:confirm")
    assert code_name(r.code) == "INVALID_ARGUMENT" and r.error.field == "units[0].count"
    assert pgdb.value("SELECT count(*) FROM holdfast.idempotency") == "0"

    r = confirm(pclient, "ga", "show-2", units, token, "order-1:confirm", "order-1", b"\x00p")
    assert code_name(r.code) == "OK", r.message
    assert r.confirm.fence == fence and not r.confirm.replayed
    assert [(u.pool, u.count) for u in r.confirm.units] == units
    assert r.confirm.confirmed_at_unix_ms > 1_600_000_000_000
    assert (sold(pgdb, "ga", "show-2", "adult"), sold(pgdb, "ga", "show-2", "child")) == (2, 1)
    assert pgdb.query("SELECT fence, idempotency_key, reference FROM holdfast.pool_claims") == \
        [(str(fence), "order-1:confirm", "order-1")]
    # The hold's units became sold units in the mirror at once.
    s = status(pclient, "ga", "show-2", ["adult", "child"], token)
    assert (s["adult"].sold, s["adult"].held, s["adult"].owned) == (2, 0, 0)
    assert (s["child"].sold, s["child"].free) == (1, 3)
    pdaemon.wait_log("after=sold")

    # The same confirm again: the stored result, nothing sold twice; under a
    # new hold, the retry gives the new hold's units back.
    again = held(pclient, "ga", "show-2", units)
    r = confirm(pclient, "ga", "show-2", units, again, "order-1:confirm", "order-1", b"\x00p")
    assert code_name(r.code) == "OK" and r.confirm.replayed and r.confirm.fence == fence
    assert sold(pgdb, "ga", "show-2", "adult") == 2
    assert status(pclient, "ga", "show-2", ["adult"])["adult"].held == 0
    # The key with another request.
    r = confirm(pclient, "ga", "show-2", [("adult", 1)], again, "order-1:confirm", "order-1")
    assert code_name(r.code) == "IDEMPOTENCY_MISMATCH"

    # One hold is confirmed once, whatever key a retry uses: put the hold
    # back in Redis as if the mark after the commit had failed.
    redis.cmd("HSET", "hf:{ga:show-2}:#pool:adult", token, "2")
    redis.cmd("HSET", "hf:{ga:show-2}:#pool:child", token, "1")
    for pool in ("adult", "child"):
        redis.cmd("ZADD", "hf:{ga:show-2}:#pexp:%s" % pool, str(time.time() * 1000 + 60000),
                  token)
    r = confirm(pclient, "ga", "show-2", units, token, "order-1:other-key", "order-1")
    assert code_name(r.code) == "CONFLICT" and "already confirmed" in r.message
    assert sold(pgdb, "ga", "show-2", "adult") == 2

    # Cancel: part of the order, all or nothing, scoped to its reference.
    r = cancel(pclient, "ga", "show-2", [("adult", 1)], "refund-1", "order-2")
    assert code_name(r.code) == "NOT_FOUND" and r.error.resource_id == "adult"
    r = cancel(pclient, "ga", "show-2", [("adult", 1), ("child", 2)], "refund-2", "order-1")
    assert code_name(r.code) == "NOT_FOUND" and r.error.resource_id == "child"
    assert "only 1 units" in r.message
    assert sold(pgdb, "ga", "show-2", "adult") == 2
    r = cancel(pclient, "ga", "show-2", [("adult", 1)], "refund-3", "order-1")
    assert code_name(r.code) == "OK" and r.cancel.cancelled == 1
    assert [(u.pool, u.count) for u in r.cancel.units] == [("adult", 1)]
    r = cancel(pclient, "ga", "show-2", [("adult", 1)], "refund-3", "order-1")
    assert code_name(r.code) == "OK" and r.cancel.replayed
    assert sold(pgdb, "ga", "show-2", "adult") == 1 == claimed_units(pgdb, "ga", "show-2",
                                                                     "adult")
    # The unit is back for sale in the mirror at once.
    assert status(pclient, "ga", "show-2", ["adult"])["adult"].free == 9
    assert pgdb.query("SELECT pool, units, reference, idempotency_key"
                      " FROM holdfast.pool_cancellations") == \
        [("adult", "1", "order-1", "refund-3")]
    # Lowering below what is sold is refused; to it is fine.
    r = set_capacity(pclient, "ga", "show-2", "child", 0)
    assert code_name(r.code) == "FAILED_PRECONDITION" and r.error.field == "capacity"
    assert r.error.resource_id == "child"
    capacity_ok(pclient, "ga", "show-2", "child", 1)
    r = hold(pclient, "ga", "show-2", [("child", 1)])
    assert code_name(r.code) == "CONFIRMED"
    # The tokens never reach PostgreSQL.
    dump = pgdb.dump(data_only=True)
    for t in (token, again):
        assert t not in dump and t.split(".")[1] not in dump


def test_a_lost_hold_answers_hold_lost_for_good(pgdb, pclient):
    capacity_ok(pclient, "ga", "show-3", "adult", 2)
    token = held(pclient, "ga", "show-3", [("adult", 2)], ttl_ms=30)
    time.sleep(0.2)
    r = confirm(pclient, "ga", "show-3", [("adult", 2)], token, "k-lost")
    assert code_name(r.code) == "HOLD_LOST" and r.error.resource_id == "adult"
    fresh = held(pclient, "ga", "show-3", [("adult", 2)])
    r = confirm(pclient, "ga", "show-3", [("adult", 2)], fresh, "k-lost")
    assert code_name(r.code) == "HOLD_LOST" and "replayed" in r.message
    assert sold(pgdb, "ga", "show-3", "adult") == 0
    r = confirm(pclient, "ga", "show-3", [("adult", 2)], fresh, "k-new")
    assert code_name(r.code) == "OK"


# --- the races -------------------------------------------------------------

def test_200_clients_race_for_the_last_10_units(pgdb, pdaemon, pclient):
    capacity_ok(pclient, "ga", "race", "ga", 1000)
    # 990 are already sold.
    big = held(pclient, "ga", "race", [("ga", 990)])
    assert code_name(confirm(pclient, "ga", "race", [("ga", 990)], big, "bulk", "bulk").code) \
        == "OK"
    start = threading.Barrier(200)
    results = [None] * 200

    def client(i):
        with Client(pdaemon.socket, timeout=60) as c:
            start.wait()
            r = hold(c, "ga", "race", [("ga", 1)], timeout_ms=20000)
            if code_name(r.code) != "OK":
                results[i] = ("hold", code_name(r.code))
                return
            r = confirm(c, "ga", "race", [("ga", 1)], r.hold.token, "race-%d" % i,
                        "buyer-%d" % i, timeout_ms=20000)
            results[i] = ("confirm", code_name(r.code))

    run_threads(200, client)
    confirmed = [r for r in results if r == ("confirm", "OK")]
    assert len(confirmed) == 10, results
    refused = [r for r in results if r[0] == "hold"]
    assert len(refused) == 190
    assert {code for _, code in refused} <= {"HELD_BY_ANOTHER", "CONFIRMED"}
    assert sold(pgdb, "ga", "race", "ga") == 1000 == claimed_units(pgdb, "ga", "race", "ga")
    assert pgdb.value("SELECT count(*) FROM holdfast.pool_claims") == "11"
    r = hold(pclient, "ga", "race", [("ga", 1)])
    assert code_name(r.code) == "CONFIRMED"


def test_multi_pool_holds_are_all_or_nothing(pgdb, pdaemon, pclient, redis):
    caps = {"adult": 12, "child": 7, "senior": 5}
    for pool, cap in caps.items():
        capacity_ok(pclient, "ga", "mix", pool, cap)
    shapes = [[("adult", 2), ("child", 1)], [("adult", 1), ("child", 1), ("senior", 1)],
              [("child", 2)], [("senior", 2), ("adult", 1)], [("adult", 3)]]
    granted = []
    lock = threading.Lock()

    def client(i):
        rnd = random.Random(i)
        with Client(pdaemon.socket, timeout=60) as c:
            for _ in range(6):
                units = rnd.choice(shapes)
                r = hold(c, "ga", "mix", units, timeout_ms=20000)
                if code_name(r.code) == "OK":
                    with lock:
                        granted.append((r.hold.token, units))
                else:
                    assert code_name(r.code) in ("HELD_BY_ANOTHER", "CONFIRMED"), r.message

    run_threads(40, client)
    assert granted
    # In Redis every token holds all of its units or none; never more than
    # the capacity is held.
    for pool, cap in caps.items():
        fields = redis.cmd("HGETALL", "hf:{ga:mix}:#pool:%s" % pool)
        h = dict(zip(fields[::2], fields[1::2]))
        want = {t: str(n) for t, units in granted for p, n in units if p == pool}
        assert {k: v for k, v in h.items() if "." in k} == want
        assert int(h["held"]) == sum(int(v) for v in want.values()) <= cap
    # Half of them are sold, the rest released; PostgreSQL agrees unit for unit.
    for k, (token, units) in enumerate(granted):
        if k % 2 == 0:
            r = confirm(pclient, "ga", "mix", units, token, "mix-%d" % k, "m%d" % k)
            assert code_name(r.code) == "OK", r.message
        else:
            r = pclient.call(release=pb().ReleaseRequest(
                namespace="ga", partition="mix", pools=[p for p, _ in units], token=token))
            assert code_name(r.code) == "OK"
            assert r.release.released == sum(n for _, n in units)
    st = status(pclient, "ga", "mix", list(caps))
    for pool in caps:
        want = sum(n for k, (_, units) in enumerate(granted) if k % 2 == 0
                   for p, n in units if p == pool)
        assert sold(pgdb, "ga", "mix", pool) == want == claimed_units(pgdb, "ga", "mix", pool)
        assert st[pool].sold == want and st[pool].held == 0
    # Every claim has exactly the pools of its hold.
    rows = pgdb.query("SELECT c.idempotency_key, string_agg(u.pool || '=' || u.units, ','"
                      " ORDER BY u.pool) FROM holdfast.pool_claims c"
                      " JOIN holdfast.pool_claim_units u USING (ns, partition, fence)"
                      " GROUP BY c.idempotency_key")
    for key, got in rows:
        units = granted[int(key.split("-")[1])][1]
        assert got == ",".join("%s=%d" % u for u in sorted(units))


def test_expired_holds_give_their_units_back_to_the_next_caller(pgdb, pclient, redis):
    capacity_ok(pclient, "ga", "exp", "adult", 3)
    capacity_ok(pclient, "ga", "exp", "child", 1)
    first = held(pclient, "ga", "exp", [("adult", 3), ("child", 1)], ttl_ms=60000)
    r = hold(pclient, "ga", "exp", [("adult", 1)])
    assert code_name(r.code) == "HELD_BY_ANOTHER"
    # The hold now expires in 10 ms; nothing sweeps: the next call finds its
    # units free by itself.
    r = pclient.call(extend=pb().ExtendRequest(namespace="ga", partition="exp",
                                               pools=["adult", "child"], token=first,
                                               ttl_ms=10))
    assert code_name(r.code) == "OK"
    time.sleep(0.3)
    assert redis.cmd("HGET", "hf:{ga:exp}:#pool:adult", first) == "3"
    second = held(pclient, "ga", "exp", [("adult", 3), ("child", 1)])
    assert redis.cmd("HGET", "hf:{ga:exp}:#pool:adult", first) is None
    s = status(pclient, "ga", "exp", ["adult", "child"], second)
    assert (s["adult"].held, s["adult"].owned, s["child"].held) == (3, 3, 1)
    # The expired token holds nothing any more.
    r = pclient.call(extend=pb().ExtendRequest(namespace="ga", partition="exp",
                                               pools=["adult"], token=first))
    assert code_name(r.code) == "NOT_HELD"
    r = confirm(pclient, "ga", "exp", [("adult", 3), ("child", 1)], first, "late")
    assert code_name(r.code) == "HOLD_LOST"
    r = confirm(pclient, "ga", "exp", [("adult", 3), ("child", 1)], second, "on-time")
    assert code_name(r.code) == "OK"
    assert sold(pgdb, "ga", "exp", "adult") == 3


def test_postgres_refuses_an_oversell_when_redis_forgets(pgdb, pdaemon, pclient, redis):
    """The hold of a confirm in flight is lost with all of Redis; the mirror
    is loaded again and grants the same units to another token. Both
    confirms reach PostgreSQL: exactly one sells."""
    capacity_ok(pclient, "ga", "amnesia", "ga", 5)
    first = held(pclient, "ga", "amnesia", [("ga", 5)])
    blocker = pgdb.session()
    blocker.query("BEGIN; SELECT * FROM holdfast.pools WHERE pool = 'ga' FOR UPDATE")
    answers = {}

    def confirm_in(name, token, c):
        answers[name] = confirm(c, "ga", "amnesia", [("ga", 5)], token, "k-" + name, name,
                                timeout_ms=20000)

    with Client(pdaemon.socket) as c1, Client(pdaemon.socket) as c2:
        t1 = threading.Thread(target=confirm_in, args=("first", first, c1))
        t1.start()
        harness.wait_for(lambda: pgdb.daemon_backends(waiting_on_lock=True),
                         what="the first confirm to wait for the row lock")
        redis.cmd("FLUSHALL")
        # The mirror is gone: loaded again from PostgreSQL (nothing sold yet).
        second = held(pclient, "ga", "amnesia", [("ga", 5)])
        t2 = threading.Thread(target=confirm_in, args=("second", second, c2))
        t2.start()
        harness.wait_for(lambda: len(pgdb.daemon_backends(waiting_on_lock=True)) == 2,
                         what="both confirms to wait for the row lock")
        blocker.query("COMMIT")
        t1.join(30)
        t2.join(30)
    blocker.close()
    codes = sorted(code_name(a.code) for a in answers.values())
    assert codes == ["CONFLICT", "OK"], [a.message for a in answers.values()]
    loser = [a for a in answers.values() if code_name(a.code) == "CONFLICT"][0]
    assert "only 0 units left" in loser.message
    assert sold(pgdb, "ga", "amnesia", "ga") == 5 == claimed_units(pgdb, "ga", "amnesia", "ga")


def test_redis_forgetting_mid_run_never_oversells(pgdb, pdaemon, pclient, redis):
    capacity_ok(pclient, "ga", "flush", "ga", 20)
    stop = threading.Event()
    oks = []
    lock = threading.Lock()

    def client(i):
        with Client(pdaemon.socket, timeout=60) as c:
            for n in range(40):
                r = hold(c, "ga", "flush", [("ga", 1)], timeout_ms=10000)
                if code_name(r.code) == "CONFIRMED":
                    return  # sold out
                if code_name(r.code) != "OK":
                    time.sleep(0.01)
                    continue
                token = r.hold.token
                r = confirm(c, "ga", "flush", [("ga", 1)], token, "f-%d-%d" % (i, n),
                            "b-%d" % i, timeout_ms=10000)
                if code_name(r.code) == "OK":
                    with lock:
                        oks.append(i)
                else:  # what a client does: give the hold back
                    c.call(release=pb().ReleaseRequest(namespace="ga", partition="flush",
                                                       pools=["ga"], token=token))

    def amnesia():
        while not stop.is_set():
            time.sleep(0.05)
            redis.cmd("FLUSHALL")

    flusher = threading.Thread(target=amnesia)
    flusher.start()
    try:
        run_threads(30, client)
    finally:
        stop.set()
        flusher.join()
    total = sold(pgdb, "ga", "flush", "ga")
    assert total <= 20
    assert total == len(oks) == claimed_units(pgdb, "ga", "flush", "ga")
    # What is left can still be sold, and no more.
    while True:
        r = hold(pclient, "ga", "flush", [("ga", 1)])
        if code_name(r.code) == "CONFIRMED":
            break
        assert code_name(r.code) == "OK", r.message
        assert code_name(confirm(pclient, "ga", "flush", [("ga", 1)], r.hold.token,
                                 "rest-%d" % total, "rest").code) == "OK"
        total += 1
    assert total == 20 == sold(pgdb, "ga", "flush", "ga")


def test_a_capacity_lowered_mid_sale(pgdb, pdaemon, pclient):
    capacity_ok(pclient, "ga", "lower", "ga", 10)
    tokens = [held(pclient, "ga", "lower", [("ga", 2)]) for _ in range(4)]  # 8 held
    r = capacity_ok(pclient, "ga", "lower", "ga", 5)
    assert r.set_capacity.pool.capacity == 5
    # The holds stay; the mirror shows no unit free; PostgreSQL sells 5 at most.
    s = status(pclient, "ga", "lower", ["ga"])["ga"]
    assert (s.capacity, s.held, s.free) == (5, 8, 0)
    codes = [code_name(confirm(pclient, "ga", "lower", [("ga", 2)], t, "l-%d" % i, "o%d" % i).code)
             for i, t in enumerate(tokens)]
    assert codes == ["OK", "OK", "CONFLICT", "CONFLICT"]
    assert sold(pgdb, "ga", "lower", "ga") == 4
    r = set_capacity(pclient, "ga", "lower", "ga", 3)
    assert code_name(r.code) == "FAILED_PRECONDITION" and "4 units sold" in r.message
    r = hold(pclient, "ga", "lower", [("ga", 2)])
    assert code_name(r.code) == "CONFIRMED" and "1 left unsold" in r.message

    # Lowered while confirms race: whatever the interleaving, sold never
    # exceeds the capacity in effect.
    capacity_ok(pclient, "ga", "race2", "ga", 30)
    lowered = {}

    def client(i):
        with Client(pdaemon.socket, timeout=60) as c:
            if i == 0:
                time.sleep(0.05)
                lowered["r"] = set_capacity(c, "ga", "race2", "ga", 12)
                return
            for n in range(3):
                r = hold(c, "ga", "race2", [("ga", 1)], timeout_ms=10000)
                if code_name(r.code) != "OK":
                    continue
                confirm(c, "ga", "race2", [("ga", 1)], r.hold.token, "r2-%d-%d" % (i, n), "x",
                        timeout_ms=10000)

    run_threads(21, client)
    total = sold(pgdb, "ga", "race2", "ga")
    assert total == claimed_units(pgdb, "ga", "race2", "ga")
    cap = int(pgdb.value("SELECT capacity FROM holdfast.pools WHERE partition = 'race2'"))
    assert total <= cap
    if code_name(lowered["r"].code) == "OK":
        assert cap == 12
    else:
        assert code_name(lowered["r"].code) == "FAILED_PRECONDITION" and cap == 30


def test_coupon_batch_50_users_4_presses_30_coupons(pgdb, pdaemon, pclient):
    """One coupon per user: every press holds the batch's pool and the user's
    own pool, whose capacity is the partition's default, 1. The user pool
    refuses a second press at once in Redis and a second sale in
    PostgreSQL; the keys stay per attempt, so no refusal locks a user out."""
    capacity_ok(pclient, "coupon", "batch-1", "coupons", 30)
    r = capacity_ok(pclient, "coupon", "batch-1", "", 1, default=True)
    assert r.set_capacity.pool.partition_default and r.set_capacity.pool.capacity == 1
    users, presses = 50, 4
    start = threading.Barrier(users * presses)
    outcome = {}
    lock = threading.Lock()

    def press(i):
        user, n = "user-%d" % (i // presses), i % presses
        units = [("coupons", 1), (user, 1)]
        with Client(pdaemon.socket, timeout=60) as c:
            start.wait()
            for attempt in range(300):
                r = hold(c, "coupon", "batch-1", units, timeout_ms=20000)
                code = code_name(r.code)
                if code == "CONFIRMED":  # sold out, or this user has one
                    result = ("refused", r.error.resource_id)
                    break
                if code != "OK":
                    assert code == "HELD_BY_ANOTHER", r.message
                    time.sleep(0.02)  # others' holds may still fail and come back
                    continue
                r = confirm(c, "coupon", "batch-1", units, r.hold.token,
                            "batch-1:%s:press-%d:%d" % (user, n, attempt), user,
                            timeout_ms=20000)
                assert code_name(r.code) == "OK", r.message
                result = ("sold", user)
                break
            else:
                result = ("gave up", user)
            with lock:
                outcome[(user, n)] = result

    run_threads(users * presses, press)
    sales = [v for v in outcome.values() if v[0] == "sold"]
    assert len(sales) == 30
    per_user = {}
    for _, user in sales:
        per_user[user] = per_user.get(user, 0) + 1
    assert max(per_user.values()) == 1 and len(per_user) == 30
    assert not [v for v in outcome.values() if v[0] == "gave up"]
    # PostgreSQL agrees: 30 coupons, one per user's pool, each with its coupon.
    assert sold(pgdb, "coupon", "batch-1", "coupons") == 30
    assert pgdb.value("SELECT count(*) FROM holdfast.pools WHERE ns = 'coupon'"
                      " AND pool LIKE 'user-%' AND sold > 0") == "30"
    assert pgdb.value("SELECT max(sold) FROM holdfast.pools WHERE ns = 'coupon'"
                      " AND pool LIKE 'user-%'") == "1"
    assert pgdb.value("SELECT count(DISTINCT reference) FROM holdfast.pool_claims"
                      " WHERE ns = 'coupon'") == "30"
    # A user who has one is refused at once, by the user's own pool.
    winner = sorted(per_user)[0]
    r = hold(pclient, "coupon", "batch-1", [(winner, 1)])
    assert code_name(r.code) == "CONFIRMED" and r.error.resource_id == winner
    # The default cannot go below what a user pool has sold.
    r = set_capacity(pclient, "coupon", "batch-1", "", 0, default=True)
    assert code_name(r.code) == "FAILED_PRECONDITION" and r.error.resource_id.startswith("user-")


# --- holdfastctl -----------------------------------------------------------

def test_holdfastctl_sets_capacity_and_sells_units(pgdb, pdaemon):
    def ctl(*args, input=None):
        r = pdaemon.ctl(*args, input=input)
        return r.returncode, dict(line.split("=", 1) for line in r.stdout.splitlines()
                                  if "=" in line and " " not in line.split("=", 1)[0]), r

    rc, out, _ = ctl("set-capacity", "ga", "ctl", "adult", "4")
    assert rc == 0 and out == {"pool": "adult", "capacity": "4", "sold": "0",
                               "partition_default": "false"}
    rc, out, _ = ctl("set-capacity", "ga", "ctl", "--default", "2")
    assert rc == 0 and out["partition_default"] == "true" and out["capacity"] == "2"
    rc, out, _ = ctl("hold", "ga", "ctl", "adult=3", "child=1")
    assert rc == 0
    token = out["token"]
    harness.ISSUED_TOKENS.add(token)
    rc, _, r = ctl("status", "ga", "ctl", "adult", "child", "--pools", "--token-stdin",
                   input=token + "\n")
    assert rc == 0
    assert "adult capacity=4 sold=0 held=3 free=1 owned=3 " in r.stdout
    assert "child capacity=2 sold=0 held=1 free=1 owned=1 " in r.stdout
    rc, out, r = ctl("confirm", "ga", "ctl", "adult=3", "child=1", "--key", "ctl-1",
                     "--reference", "o-1", "--token-stdin", input=token + "\n")
    assert rc == 0, r.stdout + r.stderr
    assert "units=adult=3" in r.stdout and "units=child=1" in r.stdout
    rc, _, r = ctl("get-capacity", "ga", "ctl", "adult", "child")
    assert rc == 0
    assert "default_capacity=2" in r.stdout
    assert "adult capacity=4 sold=3 partition_default=false" in r.stdout
    assert "child capacity=2 sold=1 partition_default=true" in r.stdout
    rc, out, r = ctl("set-capacity", "ga", "ctl", "adult", "2")
    assert rc == 1 and out["code"] == "FAILED_PRECONDITION", r.stdout
    rc, out, r = ctl("cancel", "ga", "ctl", "adult=1", "--key", "ctl-refund",
                     "--reference", "o-1")
    assert rc == 0 and out["cancelled"] == "1", r.stdout
    rc, out, r = ctl("hold", "ga", "ctl", "adult=2")
    assert rc == 0, r.stdout
    harness.ISSUED_TOKENS.add(out["token"])
    rc, out, r = ctl("release", "ga", "ctl", "adult=2", "--token-stdin", input=out["token"])
    assert rc == 0 and out["released"] == "2", r.stdout
    assert sold(pgdb, "ga", "ctl", "adult") == 2


def test_pool_names_with_nul_or_invalid_utf8_are_refused_on_the_wire(pgdb, pclient, redis):
    capacity_ok(pclient, "ga", "hostile", "adult", 5)
    token = held(pclient, "ga", "hostile", [("adult", 1)])
    before = sorted(redis.cmd("KEYS", "hf:*"))
    requests = [
        ("pool", pb().Request(id=7, hold=pb().HoldRequest(
            namespace="ga", partition="hostile", units=takes([("adult", 1), ("a~b", 1)])))),
        ("pools[1]", pb().Request(id=7, release=pb().ReleaseRequest(
            namespace="ga", partition="hostile", pools=["adult", "a~b"], token=token))),
        ("pool", pb().Request(id=7, set_capacity=pb().SetCapacityRequest(
            namespace="ga", partition="hostile", pool="a~b", capacity=1))),
        ("pools[0]", pb().Request(id=7, get_capacity=pb().GetCapacityRequest(
            namespace="ga", partition="hostile", pools=["a~b"]))),
    ]
    for field, req in requests:
        for bad in (b"\x00", b"\xff"):
            body = req.SerializeToString().replace(b"~", bad)
            pclient.send_raw(len(body).to_bytes(4, "big") + body)
            r = pclient.recv()
            assert code_name(r.code) == "INVALID_ARGUMENT" and r.error.field == field, r
    assert sorted(redis.cmd("KEYS", "hf:*")) == before
    assert status(pclient, "ga", "hostile", ["adult"], token)["adult"].owned == 1
