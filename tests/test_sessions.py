"""Session-bound holds (HoldRequest.session, docs/sessions.md) against a real
redis-server and holdfastd: a killed holder frees its seats at once, an idle
one keeps them, Redis trouble either keeps a hold or reports it lost (never
silently gone), 1,000 holds renew with one Redis call per tick, Release and
Confirm take a hold out of the session, and a restarted daemon adopts none.

The daemon runs under ASan or valgrind too (HOLDFASTD_WRAPPER); waits that
depend on its speed are scaled by SLOW, the Redis TTLs are not."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import harness
import pgharness as pgh
from harness import Client, code_name, pb


def _slowdown():
    if os.environ.get("HOLDFASTD_WRAPPER"):
        return 20
    with open(harness.HOLDFASTD, "rb") as f:
        if b"__asan_init" in f.read():
            return 4
    return 1


SLOW = _slowdown()


def namespaces(session_ttl_ms=5000, extra=""):
    return """
    seat = { default_ttl_ms = 30000, min_ttl_ms = 10, max_ttl_ms = 600000,
             session_ttl_ms = %d %s },
    short = { default_ttl_ms = 1000, min_ttl_ms = 10, max_ttl_ms = 2000 },
""" % (session_ttl_ms, extra)


def session_hold(c, ns, partition, ids, **kw):
    return c.call(hold=pb().HoldRequest(namespace=ns, partition=partition, ids=ids,
                                        session=True), **kw)


def held(c, ns, partition, ids):
    r = session_hold(c, ns, partition, ids)
    assert code_name(r.code) == "OK", r.message
    return r.hold


def owned(daemon, ns, partition, ids, token):
    with Client(daemon.socket) as c:
        r = c.status(ns, partition, ids, token)
    return [s.owned for s in r.status.resources]


def metrics(daemon):
    with Client(daemon.socket) as c:
        return harness.parse_metrics(c.metrics())


def next_event(c, timeout):
    """The next frame on c, which must be a session event (id 0), or None."""
    c.sock.settimeout(timeout)
    try:
        r = c.recv()
    except (TimeoutError, OSError):
        return None
    finally:
        c.sock.settimeout(10.0)
    assert r.id == 0 and r.WhichOneof("result") == "session_event", r
    assert code_name(r.code) == "OK"
    return r.session_event


def fcalls(redis):
    """How many FCALLs Redis has run."""
    for line in redis.cmd("INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_fcall:"):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


# ---- the holder goes away ----

HOLDER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, %r)
    import harness
    from harness import Client, pb
    c = Client(sys.argv[1])
    r = c.call(hold=pb().HoldRequest(namespace="seat", partition="run-1", ids=["E7", "E8"],
                                     session=True))
    print(harness.code_name(r.code), r.hold.token, flush=True)
    time.sleep(120)
""") % os.path.dirname(os.path.abspath(__file__))


def test_a_killed_holder_frees_its_seats_at_once(make_daemon):
    """SIGKILL: the kernel closes the holder's socket, the daemon releases
    its session holds; a bystander polling Hold gets the seats within
    100 ms (scaled for sanitizer builds), far inside the 5 s session TTL."""
    daemon = make_daemon(namespaces=namespaces(5000))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, daemon.socket],
                              stdout=subprocess.PIPE, text=True)
    try:
        code, token = holder.stdout.readline().split()
        harness.ISSUED_TOKENS.add(token)
        assert code == "OK"
        assert owned(daemon, "seat", "run-1", ["E7", "E8"], token) == [True, True]
        with Client(daemon.socket) as c:
            r = c.hold("seat", "run-1", ["E7", "E8"], ttl_ms=60000)
            assert code_name(r.code) == "HELD_BY_ANOTHER"
            killed = time.monotonic()
            holder.kill()
            bound = 0.1 * SLOW
            while True:
                r = c.hold("seat", "run-1", ["E7", "E8"], ttl_ms=60000)
                elapsed = time.monotonic() - killed
                if code_name(r.code) == "OK":
                    break
                assert code_name(r.code) == "HELD_BY_ANOTHER", r.message
                assert elapsed < 4.0, "the seats were still held %.2f s after SIGKILL" % elapsed
                time.sleep(0.002)
            print("seats freed %.1f ms after SIGKILL" % (elapsed * 1000))
            assert elapsed < bound, "seats freed %.0f ms after SIGKILL (bound %.0f ms)" % (
                elapsed * 1000, bound * 1000)
    finally:
        holder.kill()
        holder.wait()
    harness.wait_for(lambda: metrics(daemon)["holdfast_session_releases_total"] == 1,
                     timeout=2 * SLOW, what="the release counted")
    assert metrics(daemon)["holdfast_session_holds"] == 0


def test_closing_the_connection_releases_only_that_connections_session_holds(make_daemon):
    daemon = make_daemon(namespaces=namespaces(5000))
    with Client(daemon.socket) as keeper:
        kept = held(keeper, "seat", "run-1", ["K1"])
        plain = keeper.hold("seat", "run-1", ["P1"], ttl_ms=60000).hold
        with Client(daemon.socket) as c:
            gone = held(c, "seat", "run-1", ["G1", "G2"])
            other = c.hold("seat", "run-1", ["P2"], ttl_ms=60000).hold
            assert metrics(daemon)["holdfast_session_holds"] == 2
        harness.wait_for(lambda: owned(daemon, "seat", "run-1", ["G1", "G2"], gone.token)
                         == [False, False], timeout=2 * SLOW, what="the session release")
        with Client(daemon.socket) as c:
            r = c.status("seat", "run-1", ["G1", "G2", "P2", "K1", "P1"])
            assert [pb().ResourceState.Name(s.state) for s in r.status.resources] == [
                "RESOURCE_STATE_FREE", "RESOURCE_STATE_FREE", "RESOURCE_STATE_HELD",
                "RESOURCE_STATE_HELD", "RESOURCE_STATE_HELD"]
        assert owned(daemon, "seat", "run-1", ["K1"], kept.token) == [True]
        assert owned(daemon, "seat", "run-1", ["P2"], other.token) == [True]
        assert plain.token
        assert metrics(daemon)["holdfast_session_holds"] == 1


# ---- the holder stays ----

def test_an_idle_holder_keeps_its_hold_past_ten_session_ttls(make_daemon, redis):
    ttl = 400 if SLOW == 1 else 1000
    daemon = make_daemon(namespaces=namespaces(ttl))
    with Client(daemon.socket) as c:
        h = held(c, "seat", "run-1", ["E7"])
        assert h.ttl_ms == ttl
        key = "hf:{seat:run-1}:E7"
        deadline = time.monotonic() + 10 * ttl / 1000.0 + 0.2
        while time.monotonic() < deadline:  # the client says nothing meanwhile
            pttl = redis.cmd("PTTL", key)
            assert 0 < pttl <= ttl, pttl
            time.sleep(ttl / 4000.0)
        assert owned(daemon, "seat", "run-1", ["E7"], h.token) == [True]
        assert next_event(c, 0.05) is None
        m = metrics(daemon)
        assert m["holdfast_session_renewals_total"] >= 10
        assert m["holdfast_session_holds_lost_total"] == 0


def test_the_session_ttl_is_clamped_to_the_namespace_bounds_and_ttl_ms_is_refused(make_daemon):
    daemon = make_daemon(namespaces=namespaces(5000))
    with Client(daemon.socket) as c:
        h = held(c, "short", "run-1", ["E7"])  # session_ttl_ms 5000 > max_ttl_ms 2000
        assert h.ttl_ms == 2000
        r = c.call(hold=pb().HoldRequest(namespace="seat", partition="run-1", ids=["E8"],
                                         ttl_ms=1000, session=True))
        assert code_name(r.code) == "INVALID_ARGUMENT" and r.error.field == "ttl_ms"


def test_a_thousand_session_holds_renew_with_one_redis_call_per_tick(make_daemon, redis):
    ttl = 600 if SLOW < 20 else 3000
    daemon = make_daemon(namespaces=namespaces(ttl))
    with Client(daemon.socket, timeout=30 * SLOW) as c:
        # 10 partitions x 100 ids, pipelined 100 at a time.
        for p in range(10):
            ids = []
            for i in range(100):
                ids.append(c.send(hold=pb().HoldRequest(namespace="seat", partition="run-%d" % p,
                                                        ids=["S%d" % i], session=True)))
            for _ in ids:
                r = c.recv()
                assert code_name(r.code) == "OK", r.message
                harness.ISSUED_TOKENS.add(r.hold.token)
        m0, f0 = metrics(daemon), fcalls(redis)
        time.sleep(4 * ttl / 1000.0)
        m1, f1 = metrics(daemon), fcalls(redis)
        calls = m1["holdfast_session_renewal_calls_total"] - m0["holdfast_session_renewal_calls_total"]
        renewed = m1["holdfast_session_renewals_total"] - m0["holdfast_session_renewals_total"]
        assert calls >= 3, calls
        assert calls <= 4 * 3 + 2, calls  # one per tick (ttl / 3)
        # Each call renewed all 1,000 (a call counts when sent, its renewals
        # when answered: at most one call's worth apart at the edges).
        assert abs(renewed - 1000 * calls) <= 1000, (renewed, calls)
        # Redis saw as many calls, not 1,000 per tick.
        assert abs((f1 - f0) - calls) <= 1, (f1 - f0, calls)
        assert m1["holdfast_session_holds"] == 1000
        assert m1["holdfast_session_holds_lost_total"] == 0
    harness.wait_for(lambda: metrics(daemon)["holdfast_session_releases_total"] == 1000,
                     timeout=5 * SLOW, what="the session holds released")
    assert metrics(daemon)["holdfast_session_holds"] == 0
    assert redis.cmd("KEYS", "hf:{seat:*}:S*") == []


# ---- Redis in the way: kept, or reported lost ----

def kept_or_reported(daemon, c, token, fence, ids, wait):
    """After Redis trouble: the hold is this token's, or the client was told."""
    event = next_event(c, wait)
    if event is not None:
        assert [(l.partition, l.fence, list(l.ids)) for l in event.lost] == [
            ("run-1", fence, ids)]
        reason = pb().Code.Name(event.lost[0].reason)
        assert reason in ("CODE_NOT_HELD", "CODE_HELD_BY_ANOTHER"), reason
        assert token not in event.lost[0].message
        return "reported"
    assert owned(daemon, "seat", "run-1", ids, token) == [True] * len(ids), \
        "the hold is gone and the client was not told"
    return "kept"


def test_redis_paused_past_the_session_ttl_keeps_or_reports_the_hold(make_daemon, redis):
    daemon = make_daemon(namespaces=namespaces(500))
    with Client(daemon.socket) as c:
        h = held(c, "seat", "run-1", ["E7", "E8"])
        redis.pause()
        try:
            time.sleep(1.5)  # three session TTLs; below the stall rule's 2 s
        finally:
            redis.resume()
        outcome = kept_or_reported(daemon, c, h.token, h.fence, ["E7", "E8"], wait=3.0 * SLOW)
        # Redis' clock went on while it was stopped: the keys expired.
        assert outcome == "reported"
        assert metrics(daemon)["holdfast_session_holds"] == 0
        assert metrics(daemon)["holdfast_session_holds_lost_total"] == 1
        # The connection stays usable, and the next call on the hold says so.
        r = c.extend("seat", "run-1", ["E7", "E8"], h.token, ttl_ms=1000)
        assert code_name(r.code) == "NOT_HELD"


def test_redis_restarted_during_renewal_keeps_or_reports_the_hold(make_daemon, redis):
    daemon = make_daemon(namespaces=namespaces(600))
    with Client(daemon.socket) as c:
        h = held(c, "seat", "run-1", ["E7"])
        time.sleep(0.25)
        redis.restart()  # no persistence: the keys are gone
        outcome = kept_or_reported(daemon, c, h.token, h.fence, ["E7"], wait=5.0 * SLOW)
        assert outcome == "reported"
        daemon.wait_ready()
        assert owned(daemon, "seat", "run-1", ["E7"], h.token) == [False]


def test_redis_down_longer_than_the_ttl_reports_the_hold_lost(make_daemon, redis):
    daemon = make_daemon(namespaces=namespaces(400))
    with Client(daemon.socket) as c:
        h = held(c, "seat", "run-1", ["E7"])
        redis.stop()
        try:
            event = next_event(c, 3.0 * SLOW)
            assert event is not None, "the hold could not be renewed and the client was not told"
            lost = event.lost[0]
            assert lost.fence == h.fence and pb().Code.Name(lost.reason) == "CODE_NOT_HELD"
            assert "renewed" in lost.message
        finally:
            redis.start()
        daemon.wait_ready()


def test_a_hold_taken_over_is_reported_held_by_another(make_daemon, redis):
    daemon = make_daemon(namespaces=namespaces(300))
    with Client(daemon.socket) as c:
        h = held(c, "seat", "run-1", ["E7", "E8", "E9"])
        redis.cmd("SET", "hf:{seat:run-1}:E8", "1.someone-else", "PX", "60000")
        event = next_event(c, 2.0 * SLOW)
        assert event is not None
        lost = event.lost[0]
        assert (lost.namespace, lost.partition, list(lost.ids), lost.fence) == (
            "seat", "run-1", ["E7", "E8", "E9"], h.fence)
        assert pb().Code.Name(lost.reason) == "CODE_HELD_BY_ANOTHER"
        assert lost.resource_id == "E8"
        # All or nothing: what was still this token's is given back.
        assert redis.cmd("GET", "hf:{seat:run-1}:E7") is None
        assert redis.cmd("GET", "hf:{seat:run-1}:E9") is None
        assert redis.cmd("GET", "hf:{seat:run-1}:E8") == "1.someone-else"
        assert next_event(c, 0.5) is None  # reported once
        assert metrics(daemon)["holdfast_session_holds"] == 0


# ---- Release and Confirm ----

def test_a_released_session_hold_leaves_the_session(make_daemon, redis):
    daemon = make_daemon(namespaces=namespaces(300))
    with Client(daemon.socket) as c:
        h = held(c, "seat", "run-1", ["E7", "E8"])
        r = c.release("seat", "run-1", ["E7"], h.token)
        assert code_name(r.code) == "OK" and r.release.released == 1
        time.sleep(0.3)
        assert next_event(c, 0.2) is None  # E8 still renewed, E7 not reported
        assert owned(daemon, "seat", "run-1", ["E8"], h.token) == [True]
        assert metrics(daemon)["holdfast_session_holds"] == 1
        r = c.release("seat", "run-1", ["E8"], h.token)
        assert code_name(r.code) == "OK"
        assert metrics(daemon)["holdfast_session_holds"] == 0
        assert next_event(c, 0.4) is None
        # A plain hold on the freed seats outlives the connection.
        other = c.hold("seat", "run-1", ["E7", "E8"], ttl_ms=60000).hold
    assert owned(daemon, "seat", "run-1", ["E7", "E8"], other.token) == [True, True]
    m = metrics(daemon)
    assert m["holdfast_session_releases_total"] == 0
    assert m["holdfast_session_holds_lost_total"] == 0


def test_a_confirmed_session_hold_leaves_the_session(pgdb, make_daemon, redis):
    ns = pgh.NAMESPACES.replace("confirm_window_ms = 30000 },",
                                "confirm_window_ms = 30000, session_ttl_ms = 300 },", 1)
    daemon = make_daemon(namespaces=ns, top_extra=pgdb.config())
    with Client(daemon.socket) as c:
        h = held(c, "seat", "run-1", ["E7"])
        keep = held(c, "seat", "run-1", ["E8"])
        r = pgh.confirm(c, "seat", "run-1", ["E7"], h.token, "order-1:confirm",
                        reference="order-1")
        assert code_name(r.code) == "OK", r.message
        assert metrics(daemon)["holdfast_session_holds"] == 1
        time.sleep(0.4)
        assert next_event(c, 0.1) is None
        assert redis.cmd("GET", "hf:{seat:run-1}:E7").startswith("!confirmed:")
    # The connection closed: the marker stays, the other session hold goes.
    harness.wait_for(lambda: redis.cmd("GET", "hf:{seat:run-1}:E8") is None, timeout=2 * SLOW,
                     what="the session release")
    assert redis.cmd("GET", "hf:{seat:run-1}:E7").startswith("!confirmed:")
    assert keep.token
    assert metrics(daemon)["holdfast_session_releases_total"] == 1


# ---- the daemon goes away ----

def test_a_restarted_daemon_adopts_no_session_hold(make_daemon, redis):
    """The new process knows nothing of the old one's connections: their
    session holds expire with their session TTL."""
    ttl = 1000
    daemon = make_daemon(namespaces=namespaces(ttl))
    c = Client(daemon.socket)
    h = held(c, "seat", "run-1", ["E7"])
    daemon.proc.send_signal(signal.SIGKILL)  # no goodbye, no release
    daemon.proc.wait()
    daemon.log.close()
    daemon.proc = None
    c.close()
    stopped = time.monotonic()
    assert redis.cmd("GET", "hf:{seat:run-1}:E7") == h.token
    daemon.start()
    assert metrics(daemon)["holdfast_session_holds"] == 0
    harness.wait_for(lambda: redis.cmd("GET", "hf:{seat:run-1}:E7") is None,
                     timeout=ttl / 1000.0 + 2 * SLOW, interval=0.01,
                     what="the orphaned session hold to expire")
    assert time.monotonic() - stopped <= ttl / 1000.0 + 2 * SLOW


def test_a_stopping_daemon_releases_its_session_holds(make_daemon, redis):
    """SIGTERM: the daemon drains, closes its connections, releases their
    session holds (owner-checked), and only then closes Redis; the seats are
    free at once, not after their session TTL. Plain holds stay."""
    daemon = make_daemon(namespaces=namespaces(60000))
    c = Client(daemon.socket)
    h = held(c, "seat", "run-1", ["E7", "E8"])
    held(c, "seat", "run-1", ["E9"])
    plain = c.hold("seat", "run-1", ["P1"], ttl_ms=60000).hold
    # Another token takes E9 behind the session's back: the owner-checked
    # release leaves it alone.
    redis.cmd("SET", "hf:{seat:run-1}:E9", "1.bystander", "PX", "60000")
    assert redis.cmd("GET", "hf:{seat:run-1}:E7") == h.token
    daemon.proc.send_signal(signal.SIGTERM)
    assert daemon.proc.wait(timeout=10 * SLOW) == 0
    daemon.proc = None
    daemon.log.close()
    c.close()
    assert redis.cmd("GET", "hf:{seat:run-1}:E7") is None
    assert redis.cmd("GET", "hf:{seat:run-1}:E8") is None
    assert redis.cmd("GET", "hf:{seat:run-1}:P1") == plain.token
    assert redis.cmd("GET", "hf:{seat:run-1}:E9") == "1.bystander"
