"""Coalescing of Redis calls (redis_front.c "coalescing", scripts/holdfast.lua
`batch`): holds, extends, releases, confirm checks and marks made in one loop
iteration go to Redis as one hf1_batch call, against a real redis-server and
holdfastd.

To land in one loop iteration, the requests are written as many frames in ONE
write (send_raw). Checked here: every call still gets its own answer (tokens
and fences unique, fences rising across batches, the fence counter equal to
the last fence handed out); two holds of one id in a batch grant exactly one;
a call that raises inside the batch answers alone and leaves the others
untouched; on one Redis connection, a Status written after a Hold sees the
hold (open batches go out first); the EVALSHA and EVAL paths batch too; a
library without hf1_batch (a rolling deploy) is recovered through EVAL; pool
holds never exceed the capacity; confirms in one write (their checks and
marks coalesce too) each claim and mark their own hold. The batch metrics prove that coalescing actually happened."""
import os
import struct

import pytest

import harness
import pgharness as pgh
from harness import Client, code_name, parse_metrics, pb

NS = "seat"
BATCHES = "holdfast_redis_batches_total"
BATCHED = "holdfast_redis_batched_calls_total"
RECOVERIES = "holdfast_redis_noscript_recoveries_total"


# --- helpers ---------------------------------------------------------------

def key(part, rid, ns=NS):
    return "hf:{%s:%s}:%s" % (ns, part, rid)


def fence_key(part, ns=NS):
    return "hf:{%s:%s}:#fence" % (ns, part)


def frame(rid, **fields):
    body = pb().Request(id=rid, **fields).SerializeToString()
    return struct.pack(">I", len(body)) + body


def hold_req(part, ids, ttl_ms=30000, ns=NS):
    return {"hold": pb().HoldRequest(namespace=ns, partition=part, ids=ids, ttl_ms=ttl_ms)}


def extend_req(part, ids, token, ttl_ms, ns=NS):
    return {"extend": pb().ExtendRequest(namespace=ns, partition=part, ids=ids, token=token,
                                         ttl_ms=ttl_ms)}


def release_req(part, ids, token, ns=NS):
    return {"release": pb().ReleaseRequest(namespace=ns, partition=part, ids=ids, token=token)}


def status_req(part, ids, ns=NS):
    return {"status": pb().StatusRequest(namespace=ns, partition=part, ids=ids)}


def pipeline(c, requests, first_id=1):
    """Every request as a frame, all in one write (so the daemon reads them
    together); returns the answers in request order."""
    ids = list(range(first_id, first_id + len(requests)))
    c.send_raw(b"".join(frame(rid, **req) for rid, req in zip(ids, requests)))
    answers = {}
    for _ in ids:
        r = c.recv()
        assert r.id in ids and r.id not in answers, "unexpected answer id %d" % r.id
        answers[r.id] = r
    return [answers[rid] for rid in ids]


def metrics(c):
    m = parse_metrics(c.metrics())
    return {name: m.get(name, 0) for name in (BATCHES, BATCHED, RECOVERIES)}


def codes(answers):
    return [code_name(r.code) for r in answers]


def fence_of(token):
    return int(token.split(".", 1)[0])


def hold_release_round(c, redis, part, n=40):
    """n holds in one write, then n extends, then n releases, each in one
    write; asserts their outcomes and that each write was coalesced."""
    ids = ["s%d" % i for i in range(n)]
    before = metrics(c)
    held = pipeline(c, [hold_req(part, [i]) for i in ids])
    assert codes(held) == ["OK"] * n, [r.message for r in held]
    tokens = [r.hold.token for r in held]
    fences = [r.hold.fence for r in held]
    assert len(set(tokens)) == n
    assert [fence_of(t) for t in tokens] == fences
    assert len(set(fences)) == n
    # No order among them: a full batch goes at once, and batches sent on
    # different Redis connections may run in either order.
    for rid, token in zip(ids, tokens):
        assert redis.cmd("GET", key(part, rid)) == token
    assert int(redis.cmd("GET", fence_key(part))) == max(fences)
    after = metrics(c)
    assert after[BATCHED] - before[BATCHED] >= 2, (before, after)
    # Fewer sends than calls: they went together.
    assert after[BATCHES] - before[BATCHES] < n, (before, after)

    before = after
    extended = pipeline(c, [extend_req(part, [i], t, 120000) for i, t in zip(ids, tokens)],
                        first_id=1000)
    assert codes(extended) == ["OK"] * n, [r.message for r in extended]
    assert all(r.extend.ttl_ms == 120000 for r in extended)
    for rid in ids:
        assert 100000 < redis.cmd("PTTL", key(part, rid)) <= 120000

    released = pipeline(c, [release_req(part, [i], t) for i, t in zip(ids, tokens)],
                        first_id=2000)
    assert codes(released) == ["OK"] * n, [r.message for r in released]
    assert all(r.release.released == 1 for r in released)
    assert redis.cmd("EXISTS", *[key(part, i) for i in ids]) == 0
    after = metrics(c)
    assert after[BATCHED] - before[BATCHED] >= 4, (before, after)  # extends and releases
    # The counter stays where the last hold left it.
    assert int(redis.cmd("GET", fence_key(part))) == max(fences)


# --- holds, extends, releases ------------------------------------------------

def test_forty_holds_in_one_write_are_coalesced_and_answered_each(client, redis):
    hold_release_round(client, redis, "b1")


@pytest.mark.parametrize("path", ["evalsha", "eval"])
def test_the_script_fallback_paths_batch_too(make_daemon, redis, path):
    d = make_daemon(redis_extra='script_path = "%s"' % path)
    with Client(d.socket) as c:
        assert c.health().health.script_path == path
        hold_release_round(c, redis, "path-" + path)
    # On these paths nothing is registered as a function.
    assert redis.cmd("FUNCTION", "LIST") == []


def test_two_holds_of_one_id_in_one_write_grant_exactly_one(client, redis):
    answers = pipeline(client, [hold_req("dup", ["A"]), hold_req("dup", ["A"]),
                                hold_req("dup", ["B"])])
    got = codes(answers)
    assert sorted(got[:2]) == ["HELD_BY_ANOTHER", "OK"], got
    assert got[2] == "OK"
    winner, loser = sorted(answers[:2], key=lambda r: code_name(r.code) != "OK")
    assert loser.error.resource_id == "A" and not loser.hold.token
    assert redis.cmd("GET", key("dup", "A")) == winner.hold.token


def test_holds_of_one_id_from_many_connections_grant_exactly_one(daemon, redis):
    # Ten connections each write a hold of the shared id between holds of
    # their own ids; all writes go out before any answer is read.
    clients = [Client(daemon.socket) for _ in range(10)]
    try:
        for n, c in enumerate(clients):
            reqs = [hold_req("many", ["own%d-a" % n]), hold_req("many", ["Z"]),
                    hold_req("many", ["own%d-b" % n])]
            c.send_raw(b"".join(frame(i + 1, **r) for i, r in enumerate(reqs)))
        per_client = []
        for c in clients:
            answers = {}
            for _ in range(3):
                r = c.recv()
                answers[r.id] = r
            per_client.append([answers[i] for i in (1, 2, 3)])
    finally:
        for c in clients:
            c.close()
    shared = [a[1] for a in per_client]
    assert sorted(codes(shared)) == ["HELD_BY_ANOTHER"] * 9 + ["OK"], codes(shared)
    winner = [r for r in shared if code_name(r.code) == "OK"][0]
    assert redis.cmd("GET", key("many", "Z")) == winner.hold.token
    for a in per_client:
        assert code_name(a[0].code) == "OK" and code_name(a[2].code) == "OK"
    fences = [r.hold.fence for a in per_client for r in a if code_name(r.code) == "OK"]
    assert len(set(fences)) == len(fences) == 21
    assert int(redis.cmd("GET", fence_key("many"))) == max(fences)


def test_fences_keep_rising_across_batches(client, redis):
    part = "rise"
    first = client.hold(NS, part, ["before"])
    assert code_name(first.code) == "OK"
    batch = pipeline(client, [hold_req(part, ["b%d" % i]) for i in range(20)], first_id=100)
    assert codes(batch) == ["OK"] * 20
    second = pipeline(client, [hold_req(part, ["c%d" % i]) for i in range(20)], first_id=200)
    assert codes(second) == ["OK"] * 20
    last = client.hold(NS, part, ["after"])
    assert code_name(last.code) == "OK"
    # Each write waited for before the next: every fence of a later one is
    # higher (within one write there is no order, see hold_release_round).
    steps = [[first.hold.fence], [r.hold.fence for r in batch],
             [r.hold.fence for r in second], [last.hold.fence]]
    for a, b in zip(steps, steps[1:]):
        assert max(a) < min(b), steps
    assert len(set(sum(steps, []))) == 42
    assert int(redis.cmd("GET", fence_key(part))) == last.hold.fence
    # A lost counter (failover without persistence) does not make a batch
    # hand out an old fence: the clock is its floor.
    redis.cmd("DEL", fence_key(part))
    third = pipeline(client, [hold_req(part, ["d%d" % i]) for i in range(5)], first_id=300)
    assert codes(third) == ["OK"] * 5
    assert min(r.hold.fence for r in third) > last.hold.fence
    assert int(redis.cmd("GET", fence_key(part))) == max(r.hold.fence for r in third)


def test_a_call_that_raises_inside_a_batch_answers_alone(client, daemon, redis):
    part = "bad"
    # GET of a hash raises WRONGTYPE inside the hold function.
    redis.cmd("HSET", key(part, "poison"), "f", "v")
    ids = ["g%d" % i for i in range(5)] + ["poison"] + ["g%d" % i for i in range(5, 10)]
    before = metrics(client)
    answers = pipeline(client, [hold_req(part, [i]) for i in ids])
    got = dict(zip(ids, answers))
    bad = got.pop("poison")
    assert code_name(bad.code) == "UNAVAILABLE", (code_name(bad.code), bad.message)
    assert not bad.hold.token
    assert all(code_name(r.code) == "OK" for r in got.values()), \
        {i: (code_name(r.code), r.message) for i, r in got.items()}
    for rid, r in got.items():
        assert redis.cmd("GET", key(part, rid)) == r.hold.token
    fences = [r.hold.fence for r in got.values()]
    assert len(set(fences)) == 10
    assert int(redis.cmd("GET", fence_key(part))) == max(fences)
    # The poisoned key is untouched.
    assert redis.cmd("HGET", key(part, "poison"), "f") == "v"
    after = metrics(client)
    assert after[BATCHED] - before[BATCHED] >= 2, (before, after)
    # Logged by its code only: the error's text may echo arguments.
    daemon.wait_log("failed with WRONGTYPE inside a batch")
    # The batch that failed for one call leaves the next batch working.
    again = pipeline(client, [hold_req(part, ["h%d" % i]) for i in range(5)], first_id=500)
    assert codes(again) == ["OK"] * 5
    assert min(r.hold.fence for r in again) > max(fences)


# Calls on different connections of the pool were never ordered (each call
# takes the least busy connection; the same before coalescing). What
# coalescing must keep is the order on one connection: a daemon with one.
def order_daemon(make_daemon):
    # A later key in the Lua table wins over the harness's pool_size = 2.
    return make_daemon(redis_extra="pool_size = 1")


def test_a_status_after_holds_in_one_write_sees_them_held(make_daemon):
    # Status is not batchable: the open batch is sent before it, so Redis
    # must see the holds first. Repeated, as an ordering slip may be sporadic.
    d = order_daemon(make_daemon)
    with Client(d.socket) as c:
        before = metrics(c)
        for n in range(30):
            part = "order%d" % n
            ids = ["x", "y", "z"]
            answers = pipeline(c, [hold_req(part, [i]) for i in ids] +
                               [status_req(part, ids)], first_id=10 * n + 1)
            assert codes(answers[:3]) == ["OK"] * 3, codes(answers)
            st = answers[3]
            assert code_name(st.code) == "OK", st.message
            assert [x.state for x in st.status.resources] == \
                [pb().RESOURCE_STATE_HELD] * 3, (n, st.status)
        after = metrics(c)
        assert after[BATCHED] - before[BATCHED] >= 3 * 30, (before, after)


def test_a_single_hold_then_status_in_one_write(make_daemon):
    # A batch of one goes as its own call; it must go before the Status too.
    d = order_daemon(make_daemon)
    with Client(d.socket) as c:
        for n in range(30):
            part = "one%d" % n
            answers = pipeline(c, [hold_req(part, ["x"]), status_req(part, ["x"])],
                               first_id=10 * n + 1)
            assert code_name(answers[0].code) == "OK"
            assert answers[1].status.resources[0].state == pb().RESOURCE_STATE_HELD, n


# --- a library without hf1_batch (rolling deploy) ---------------------------

def test_a_library_without_hf1_batch_is_recovered_through_eval(client, daemon, redis):
    with open(os.path.join(harness.ROOT, "scripts", "holdfast.lua")) as f:
        text = f.read()
    lines = text.splitlines(keepends=True)
    without = [l for l in lines if "'hf1_batch'" not in l]
    assert len(without) == len(lines) - 1, "expected one hf1_batch registration"
    assert redis.cmd("FUNCTION", "DELETE", "holdfast_v1") == "OK"
    assert redis.cmd("FUNCTION", "LOAD", "REPLACE", "".join(without)) == "holdfast_v1"
    with pytest.raises(harness.RespError, match="Function not found"):
        redis.cmd("FCALL", "hf1_batch", "1", fence_key("probe"), "0")

    before = metrics(client)
    answers = pipeline(client, [hold_req("old", ["r%d" % i]) for i in range(20)])
    assert codes(answers) == ["OK"] * 20, [r.message for r in answers]
    fences = [r.hold.fence for r in answers]
    assert len(set(fences)) == 20
    for i, r in enumerate(answers):
        assert redis.cmd("GET", key("old", "r%d" % i)) == r.hold.token
    after = metrics(client)
    assert after[RECOVERIES] > before[RECOVERIES], (before, after)
    assert after[BATCHED] - before[BATCHED] >= 2, (before, after)
    # And the full library is back for the next calls.
    daemon.wait_log("reloaded after it went missing")
    harness.wait_for(lambda: "hf1_batch" in str(redis.cmd("FUNCTION", "LIST")),
                     what="hf1_batch to be registered again")
    again = pipeline(client, [hold_req("old", ["t%d" % i]) for i in range(10)], first_id=100)
    assert codes(again) == ["OK"] * 10
    assert min(r.hold.fence for r in again) > max(fences)
    assert metrics(client)[RECOVERIES] == after[RECOVERIES]


# --- pools -------------------------------------------------------------------

POOL_NAMESPACES = harness.DEFAULT_NAMESPACES + """
    stock = { kind = "pools", default_ttl_ms = 30000, min_ttl_ms = 10 },
"""


def pool_hold_req(part, pool, count=1):
    return {"hold": pb().HoldRequest(namespace="stock", partition=part,
                                     units=[pb().PoolTake(pool=pool, count=count)])}


def pool_status(c, part, pool):
    r = c.call(status=pb().StatusRequest(namespace="stock", partition=part, pools=[pool]))
    assert code_name(r.code) == "OK", r.message
    return r.status.pools[0]


def test_pool_holds_in_one_write_never_exceed_the_capacity(pgdb, make_daemon, redis):
    d = make_daemon(namespaces=POOL_NAMESPACES, top_extra=pgdb.config(pool_size=2))
    with Client(d.socket) as c:
        for part in ("cold", "warm"):
            r = c.call(set_capacity=pb().SetCapacityRequest(
                namespace="stock", partition=part, pool="sku", capacity=5))
            assert code_name(r.code) == "OK", r.message
        # "warm": Redis already knows the capacity when the batch comes.
        warm = c.call(**pool_hold_req("warm", "sku"))
        assert code_name(warm.code) == "OK", warm.message
        assert code_name(c.call(release=pb().ReleaseRequest(
            namespace="stock", partition="warm", pools=["sku"],
            token=warm.hold.token)).code) == "OK"
        for n, part in enumerate(("cold", "warm")):
            before = metrics(c)
            answers = pipeline(c, [pool_hold_req(part, "sku") for _ in range(12)],
                               first_id=100 * (n + 1))
            got = codes(answers)
            assert got.count("OK") == 5, (part, got)
            assert got.count("HELD_BY_ANOTHER") == 7, (part, got)
            granted = [r for r in answers if code_name(r.code) == "OK"]
            assert len({r.hold.token for r in granted}) == 5
            assert len({r.hold.fence for r in granted}) == 5
            s = pool_status(c, part, "sku")
            assert (s.capacity, s.held, s.free) == (5, 5, 0), (part, s)
            assert metrics(c)[BATCHED] - before[BATCHED] >= 2, part
            # Give them all back in one write: the units are free again.
            released = pipeline(c, [{"release": pb().ReleaseRequest(
                namespace="stock", partition=part, pools=["sku"], token=r.hold.token)}
                for r in granted], first_id=100 * (n + 1) + 50)
            assert codes(released) == ["OK"] * 5
            assert all(r.release.released == 1 for r in released)
            s = pool_status(c, part, "sku")
            assert (s.held, s.free) == (0, 5), (part, s)


# --- confirms: their checks and marks coalesce too ------------------------------

def test_confirms_in_one_write_claim_each_and_mark_each(pgdb, make_daemon, redis):
    d = make_daemon(namespaces=pgh.NAMESPACES, top_extra=pgdb.config(pool_size=4))
    ids = ["c%d" % i for i in range(12)]
    with Client(d.socket) as c:
        held = pipeline(c, [hold_req("conf", [i]) for i in ids])
        assert codes(held) == ["OK"] * 12
        before = metrics(c)
        confirmed = pipeline(c, [{"confirm": pb().ConfirmRequest(
            namespace=NS, partition="conf", ids=[i], token=r.hold.token,
            idempotency_key="conf-%s" % i, reference="r")} for i, r in zip(ids, held)],
            first_id=100)
        assert codes(confirmed) == ["OK"] * 12, [r.message for r in confirmed]
        after = metrics(c)
    # The confirm checks (12 in one write) went out together.
    assert after[BATCHED] - before[BATCHED] >= 2, (before, after)
    claims = pgdb.claims(NS, "conf")
    assert [row[0] for row in claims] == sorted(ids)
    assert [int(row[1]) for row in claims] == [r.hold.fence for i, r in sorted(zip(ids, held))]
    # Each hold became its confirmed marker.
    for i, r in zip(ids, held):
        assert redis.cmd("GET", key("conf", i)) == "!confirmed:%d" % r.hold.fence
