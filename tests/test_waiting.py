"""Waiting in line (HoldRequest.wait_ms, docs/waiting.md): arrival order
across two daemons, waiters that leave (client gone, wait or deadline run
out), multi-id waits without deadlock, CONFIRMED to every waiter, a Redis
restart during waits, and the holder's expiry waking the head by the
fallback timer. Time bounds are generous: they check that nobody waits for
the end of their wait, not how fast a wake-up is (bench/ measures that)."""
import select
import signal
import time

import pytest

import harness
import pgharness as pgh
from harness import Client, code_name, parse_metrics, pb, wait_for

NS, PART = "seat", "w1"


def line_key(rid, ns=NS, part=PART):
    return "hf:{%s:%s}:#line:%s" % (ns, part, rid)


def send_wait(c, ids, wait_ms, timeout_ms=None, ttl_ms=30000, ns=NS, part=PART, **kw):
    fields = {"hold": pb().HoldRequest(namespace=ns, partition=part, ids=ids, ttl_ms=ttl_ms,
                                       wait_ms=wait_ms, **kw)}
    if timeout_ms is not None:
        fields["timeout_ms"] = timeout_ms
    return c.send(**fields)


def held(c, ids, ttl_ms=30000, ns=NS, part=PART):
    r = c.hold(ns, part, ids, ttl_ms=ttl_ms)
    assert code_name(r.code) == "OK", r.message
    return r.hold.token


def queued(redis, rid, n, ns=NS, part=PART):
    wait_for(lambda: redis.cmd("ZCARD", line_key(rid, ns, part)) == n,
             what="%d waiters in line for %s" % (n, rid))


def readable(clients, timeout=0.0):
    socks = [c.sock for c in clients if c.buf == b""]
    ready = set(select.select(socks, [], [], timeout)[0]) if socks else set()
    return [c for c in clients if c.buf != b"" or c.sock in ready]


def owned(c, rid, token, ns=NS, part=PART):
    r = c.status(ns, part, [rid], token=token)
    return code_name(r.code) == "OK" and r.status.resources[0].owned


@pytest.fixture
def two(make_daemon):
    return make_daemon(), make_daemon()


def test_fifty_waiters_on_two_daemons_get_the_seat_in_arrival_order(two, redis):
    d0, d1 = two
    with Client(d0.socket) as admin:
        holder = held(admin, ["A"])
        waiters = []
        try:
            for i in range(50):
                c = Client((d0 if i % 2 == 0 else d1).socket, timeout=30)
                waiters.append(c)
                send_wait(c, ["A"], wait_ms=60000, timeout_ms=60000)
                queued(redis, "A", i + 1)
            token = holder
            fences = []
            for i, c in enumerate(waiters):
                assert code_name(admin.release(NS, PART, ["A"], token).code) == "OK"
                r = c.recv()
                assert code_name(r.code) == "OK", (i, r.message)
                # Nobody behind it has been answered.
                assert readable(waiters[i + 1:]) == [], "waiter %d was passed" % i
                token = r.hold.token
                fences.append(r.hold.fence)
                assert owned(admin, "A", token)
            assert fences == sorted(fences)
            assert code_name(admin.release(NS, PART, ["A"], token).code) == "OK"
            assert redis.cmd("EXISTS", line_key("A")) == 0
            m = parse_metrics(admin.metrics())
            assert m["holdfast_waiters"] == 0
            assert m['holdfast_waits_total{outcome="granted"}'] == 25
        finally:
            for c in waiters:
                c.close()


def test_a_waiter_whose_client_dies_is_skipped(daemon, redis):
    with Client(daemon.socket) as admin, Client(daemon.socket) as w1, \
            Client(daemon.socket) as w2, Client(daemon.socket) as w3:
        holder = held(admin, ["B"])
        for i, c in enumerate((w1, w2, w3)):
            send_wait(c, ["B"], wait_ms=30000, timeout_ms=30000)
            queued(redis, "B", i + 1, part=PART)
        w2.close()
        queued(redis, "B", 2)  # it left the line at once
        assert code_name(admin.release(NS, PART, ["B"], holder).code) == "OK"
        r = w1.recv()
        assert code_name(r.code) == "OK", r.message
        started = time.monotonic()
        assert code_name(admin.release(NS, PART, ["B"], r.hold.token).code) == "OK"
        r = w3.recv()
        assert code_name(r.code) == "OK", r.message
        assert time.monotonic() - started < 5.0
        m = parse_metrics(admin.metrics())
        assert m['holdfast_waits_total{outcome="left"}'] == 1


def test_a_waiter_whose_wait_runs_out_answers_held_and_leaves_the_line(daemon, redis):
    with Client(daemon.socket) as admin, Client(daemon.socket) as w1, \
            Client(daemon.socket) as w2, Client(daemon.socket) as w3:
        holder = held(admin, ["C"])
        send_wait(w1, ["C"], wait_ms=300, timeout_ms=30000)
        queued(redis, "C", 1)
        send_wait(w2, ["C"], wait_ms=30000, timeout_ms=30000)
        queued(redis, "C", 2)
        started = time.monotonic()
        r = w1.recv()
        assert code_name(r.code) == "HELD_BY_ANOTHER", r.message
        assert r.error.resource_id == "C"
        assert 0.25 < time.monotonic() - started < 5.0
        queued(redis, "C", 1)
        # A wait capped by the request's deadline answers DEADLINE_EXCEEDED.
        send_wait(w3, ["C"], wait_ms=60000, timeout_ms=300)
        queued(redis, "C", 2)
        r = w3.recv()
        assert code_name(r.code) == "DEADLINE_EXCEEDED", r.message
        queued(redis, "C", 1)
        # The ones that left do not block the next.
        assert code_name(admin.release(NS, PART, ["C"], holder).code) == "OK"
        r = w2.recv()
        assert code_name(r.code) == "OK", r.message
        m = parse_metrics(admin.metrics())
        assert m['holdfast_waits_total{outcome="timed_out"}'] == 2
        assert m['holdfast_waits_total{outcome="granted"}'] == 1


def test_multi_id_waits_are_all_or_nothing_without_deadlock(two, redis):
    d0, d1 = two
    with Client(d0.socket) as admin, Client(d0.socket) as x, Client(d1.socket) as y:
        ha = held(admin, ["A2"])
        hb = held(admin, ["B2"])
        send_wait(x, ["A2", "B2"], wait_ms=30000, timeout_ms=30000)
        queued(redis, "B2", 1)
        send_wait(y, ["B2", "A2"], wait_ms=30000, timeout_ms=30000)
        queued(redis, "A2", 2)
        # B2 free, A2 still held: nobody takes B2 alone.
        assert code_name(admin.release(NS, PART, ["B2"], hb).code) == "OK"
        time.sleep(0.3)
        assert readable([x, y]) == []
        st = admin.status(NS, PART, ["B2"])
        assert not st.status.resources[0].owned and st.status.resources[0].ttl_ms == 0
        assert code_name(admin.release(NS, PART, ["A2"], ha).code) == "OK"
        r = x.recv()
        assert code_name(r.code) == "OK", r.message
        assert readable([y]) == []
        assert code_name(x.release(NS, PART, ["A2", "B2"], r.hold.token).code) == "OK"
        r = y.recv()
        assert code_name(r.code) == "OK", r.message
        assert owned(admin, "A2", r.hold.token) and owned(admin, "B2", r.hold.token)


def test_the_holders_expiry_wakes_the_head_without_a_release(daemon, redis):
    with Client(daemon.socket) as admin, Client(daemon.socket) as w:
        held(admin, ["E"], ttl_ms=600)
        started = time.monotonic()
        send_wait(w, ["E"], wait_ms=20000, timeout_ms=20000)
        r = w.recv()
        assert code_name(r.code) == "OK", r.message
        assert 0.4 < time.monotonic() - started < 5.0


def test_session_holds_wait_and_their_connection_closing_wakes_the_next(daemon, redis):
    with Client(daemon.socket) as admin, Client(daemon.socket) as w2:
        holder = held(admin, ["S"])
        w1 = Client(daemon.socket)
        w1.send(hold=pb().HoldRequest(namespace=NS, partition=PART, ids=["S"], session=True,
                                      wait_ms=30000), timeout_ms=30000)
        queued(redis, "S", 1)
        send_wait(w2, ["S"], wait_ms=30000, timeout_ms=30000)
        queued(redis, "S", 2)
        assert code_name(admin.release(NS, PART, ["S"], holder).code) == "OK"
        r = w1.recv()
        assert code_name(r.code) == "OK", r.message
        started = time.monotonic()
        w1.close()  # the session hold is released, and the next waiter woken
        r = w2.recv()
        assert code_name(r.code) == "OK", r.message
        assert time.monotonic() - started < 5.0


POOL_NAMESPACES = pgh.NAMESPACES + \
    'stock = { kind = "pools", default_ttl_ms = 30000, min_ttl_ms = 10 },'


def pool_line(pool, part):
    return "hf:{stock:%s}:#pline:%s" % (part, pool)


def send_units(c, part, units, wait_ms, ttl_ms=30000, timeout_ms=30000):
    return c.send(hold=pb().HoldRequest(
        namespace="stock", partition=part, ttl_ms=ttl_ms, wait_ms=wait_ms,
        units=[pb().PoolTake(pool=p, count=n) for p, n in units]), timeout_ms=timeout_ms)


def units_held(c, part, units, ttl_ms=30000):
    send_units(c, part, units, wait_ms=0, ttl_ms=ttl_ms)
    r = c.recv()
    assert code_name(r.code) == "OK", r.message
    return r.hold.token


def release_units(c, part, pools, token):
    r = c.call(release=pb().ReleaseRequest(namespace="stock", partition=part, pools=pools,
                                           token=token))
    assert code_name(r.code) == "OK", r.message


def set_capacity(c, part, pool, capacity):
    r = c.call(set_capacity=pb().SetCapacityRequest(namespace="stock", partition=part,
                                                    pool=pool, capacity=capacity))
    assert code_name(r.code) == "OK", r.message


def test_units_wait_in_arrival_order_across_two_daemons(pgdb, make_daemon, redis):
    d0 = make_daemon(namespaces=POOL_NAMESPACES, top_extra=pgdb.config())
    d1 = make_daemon(namespaces=POOL_NAMESPACES, top_extra=pgdb.config())
    part = "u1"
    with Client(d0.socket) as admin, Client(d0.socket) as w1, Client(d1.socket) as w2:
        set_capacity(admin, part, "x", 2)
        ha = units_held(admin, part, [("x", 1)])
        hb = units_held(admin, part, [("x", 1)])
        send_units(w1, part, [("x", 2)], wait_ms=30000)
        wait_for(lambda: redis.cmd("ZCARD", pool_line("x", part)) == 1, what="w1 queued")
        send_units(w2, part, [("x", 1)], wait_ms=30000)
        wait_for(lambda: redis.cmd("ZCARD", pool_line("x", part)) == 2, what="w2 queued")
        # One unit comes back: w2 could take it, but w1 came first and
        # needs both (strict arrival order).
        release_units(admin, part, ["x"], ha)
        time.sleep(0.3)
        assert readable([w1, w2]) == []
        release_units(admin, part, ["x"], hb)
        r = w1.recv()
        assert code_name(r.code) == "OK", r.message
        first = r.hold.token
        assert readable([w2]) == []
        release_units(w1, part, ["x"], first)
        r = w2.recv()
        assert code_name(r.code) == "OK", r.message
        release_units(w2, part, ["x"], r.hold.token)
        assert redis.cmd("EXISTS", pool_line("x", part)) == 0


def test_units_wait_for_an_expiry_and_a_wait_runs_out(pgdb, make_daemon, redis):
    d = make_daemon(namespaces=POOL_NAMESPACES, top_extra=pgdb.config())
    part = "u2"
    with Client(d.socket) as admin, Client(d.socket) as w1, Client(d.socket) as w2:
        set_capacity(admin, part, "y", 1)
        units_held(admin, part, [("y", 1)], ttl_ms=600)
        started = time.monotonic()
        send_units(w1, part, [("y", 1)], wait_ms=20000)
        r = w1.recv()  # no release: the holder's expiry
        assert code_name(r.code) == "OK", r.message
        assert 0.4 < time.monotonic() - started < 5.0
        token = r.hold.token
        send_units(w2, part, [("y", 1)], wait_ms=300)
        r = w2.recv()
        assert code_name(r.code) == "HELD_BY_ANOTHER", r.message
        assert r.error.resource_id == "y"
        wait_for(lambda: redis.cmd("ZCARD", pool_line("y", part)) == 0, what="w2 left")
        release_units(w1, part, ["y"], token)


def test_redis_restart_during_waits_grants_nobody_a_held_seat(make_daemon, redis):
    d = make_daemon()
    with Client(d.socket) as admin:
        held(admin, ["R"])
        waiters = [Client(d.socket, timeout=30) for _ in range(5)]
        try:
            for i, c in enumerate(waiters):
                send_wait(c, ["R"], wait_ms=20000, timeout_ms=20000, ttl_ms=2000)
                queued(redis, "R", i + 1)
            redis.restart()  # everything is lost: holds, lines, tickets
            d.wait_ready()
            pending = list(waiters)
            deadline = time.monotonic() + 20
            while pending and time.monotonic() < deadline:
                for c in readable(pending, 0.2):
                    r = c.recv()
                    pending.remove(c)
                    assert code_name(r.code) == "OK", r.message
                    # The grant is Redis' own: this token holds the seat now,
                    # and no other waiter was answered meanwhile.
                    assert owned(admin, "R", r.hold.token)
                    assert readable(pending) == []
                    assert code_name(c.release(NS, PART, ["R"], r.hold.token).code) == "OK"
            assert not pending
        finally:
            for c in waiters:
                c.close()


def test_a_confirmed_seat_answers_confirmed_to_every_waiter(pgdb, make_daemon, redis):
    d0 = make_daemon(namespaces=pgh.NAMESPACES, top_extra=pgdb.config())
    d1 = make_daemon(namespaces=pgh.NAMESPACES, top_extra=pgdb.config())
    with Client(d0.socket) as admin:
        token = held(admin, ["K"])
        waiters = [Client((d0 if i % 2 else d1).socket) for i in range(4)]
        try:
            for i, c in enumerate(waiters):
                send_wait(c, ["K"], wait_ms=30000, timeout_ms=30000)
                queued(redis, "K", i + 1)
            started = time.monotonic()
            r = pgh.confirm(admin, NS, PART, ["K"], token, "k-1", reference="order-1")
            assert code_name(r.code) == "OK", r.message
            for c in waiters:
                r = c.recv()
                assert code_name(r.code) == "CONFIRMED", r.message
            assert time.monotonic() - started < 5.0
            assert redis.cmd("EXISTS", line_key("K")) == 0
        finally:
            for c in waiters:
                c.close()


def test_without_the_subscription_waiters_poll_and_evalsha_works_too(make_daemon, redis):
    # A user that may neither SUBSCRIBE nor run FUNCTION: the library goes
    # by EVALSHA, and waiters on another daemon are found by their polls.
    redis.cmd("ACL", "SETUSER", "app", "on", ">secret", "~*", "&*", "+@all", "-function",
              "-subscribe")
    d0 = make_daemon(redis_extra='username = "app", password = "secret"')
    d1 = make_daemon(redis_extra='username = "app", password = "secret"')
    d1.wait_log("wake-up subscription down")
    with Client(d0.socket) as admin, Client(d1.socket) as w:
        assert admin.health().health.script_path == "evalsha"
        assert parse_metrics(w.metrics())["holdfast_wait_subscribed"] == 0
        holder = held(admin, ["P"])
        send_wait(w, ["P"], wait_ms=20000, timeout_ms=20000)
        queued(redis, "P", 1)
        assert code_name(admin.release(NS, PART, ["P"], holder).code) == "OK"
        r = w.recv()
        assert code_name(r.code) == "OK", r.message
        assert parse_metrics(w.metrics())["holdfast_wait_wakeups_total"] == 0


def test_a_draining_daemon_answers_its_waiters_at_once(make_daemon, redis):
    d = make_daemon()
    with Client(d.socket) as admin, Client(d.socket) as w:
        held(admin, ["D"])
        send_wait(w, ["D"], wait_ms=60000, timeout_ms=60000)
        queued(redis, "D", 1)
        started = time.monotonic()
        d.signal(signal.SIGTERM)
        r = w.recv()
        assert code_name(r.code) == "UNAVAILABLE", r.message
        assert time.monotonic() - started < 2.5  # before the 3 s drain timeout
        queued(redis, "D", 0)


def test_a_wait_with_redis_down_answers_unavailable_never_a_grant(daemon, redis):
    with Client(daemon.socket) as c:
        redis.stop()
        send_wait(c, ["U"], wait_ms=800, timeout_ms=1500)
        r = c.recv()
        assert code_name(r.code) == "UNAVAILABLE", r.message
    redis.start()
    daemon.wait_ready()
    with Client(daemon.socket) as c:
        held(c, ["U"])  # nothing was left behind
