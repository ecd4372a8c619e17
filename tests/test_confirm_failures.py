"""Confirm's failure paths against real PostgreSQL and Redis: concurrent
confirms, Redis unreachable, failures between INSERT and COMMIT and at COMMIT,
responses lost after COMMIT, in-doubt commits settled from the idempotency
record, a late confirm from an older holder, PostgreSQL restarted under load,
and a slow database.

To make a confirm stop halfway, a test session inserts (without committing)
the claim row of one of its ids: the confirm has then bound its idempotency
key, locked its fences and claimed the ids before it, and waits."""
import os
import random
import signal
import threading
import time

import pytest

import harness
import pgharness as pgh
from harness import Client, code_name, wait_for
from pgharness import cancel, confirm, hold_token, lit, send_confirm


@pytest.fixture
def cdaemon(pgdb, make_daemon):
    return make_daemon(namespaces=pgh.NAMESPACES, top_extra=pgdb.config())


def block_claim(db, ns, partition, resource):
    """A session holding an uncommitted claim row: confirms of `resource`
    wait until it commits (they conflict) or rolls back (they go on)."""
    s = db.session()
    s.query("BEGIN")
    s.query("INSERT INTO holdfast.claims VALUES (%s, %s, %s, 1, 'blocker', '', 'blocker', now())"
            % (lit(ns), lit(partition), lit(resource)))
    return s


def wait_blocked(db, n=1):
    """The daemon's server processes waiting on a lock, once there are n."""
    return wait_for(lambda: (lambda p: p if len(p) >= n else None)(
        db.daemon_backends(waiting_on_lock=True)), timeout=20, what="a confirm waiting on a lock")


def nothing_written(db, ns, partition, key):
    assert db.claims(ns, partition) == []
    assert db.idempotency(ns, key) == []
    assert db.value("SELECT count(*) FROM holdfast.fences WHERE partition = %s"
                    % lit(partition)) == "0"


def log_line(daemon, cid):
    text = daemon.wait_log("cid=%s " % cid)
    return [ln for ln in text.splitlines() if "req cid=%s " % cid in ln][0]


@pytest.mark.parametrize("first", ["commits", "rolls_back"])
def test_two_concurrent_confirms_on_one_seat(pgdb, cdaemon, redis, first):
    """A waits halfway through its transaction; Redis then loses A's hold on
    seat 5 (a failover) and B holds and confirms it, waiting behind A in
    PostgreSQL. Whatever A does, B's recorded result is the right one."""
    with Client(cdaemon.socket) as ca, Client(cdaemon.socket) as cb:
        ta, fa = hold_token(ca, "seat", "conc", ["5", "7"])
        blocker = block_claim(pgdb, "seat", "conc", "7")
        try:
            send_confirm(ca, "seat", "conc", ["5", "7"], ta, "A", "alice", timeout_ms=20000)
            wait_blocked(pgdb, 1)
            redis.cmd("DEL", "hf:{seat:conc}:5")
            tb, fb = hold_token(cb, "seat", "conc", ["5"])
            assert fb > fa
            send_confirm(cb, "seat", "conc", ["5"], tb, "B", "bob", timeout_ms=20000)
            wait_blocked(pgdb, 2)
            blocker.query("ROLLBACK" if first == "commits" else "COMMIT")
            ra, rb = ca.recv(), cb.recv()
        finally:
            blocker.close()
    claims = {r[0]: (r[2], r[3]) for r in pgdb.claims("seat", "conc")}
    if first == "commits":
        assert code_name(ra.code) == "OK", ra.message
        assert code_name(rb.code) == "CONFLICT" and rb.error.resource_id == "5"
        assert claims == {"5": ("alice", "A"), "7": ("alice", "A")}
        assert pgdb.idempotency("seat", "B")[0][1] == "CONFLICT"
    else:
        assert code_name(ra.code) == "CONFLICT" and ra.error.resource_id == "7"
        assert code_name(rb.code) == "OK", rb.message
        assert claims == {"5": ("bob", "B"), "7": ("blocker", "blocker")}
        assert pgdb.idempotency("seat", "A")[0][1] == "CONFLICT"
        assert pgdb.idempotency("seat", "B")[0][1] == "OK"


@pytest.mark.parametrize("how", ["stopped", "paused"])
def test_redis_unreachable_at_confirm_claims_nothing(pgdb, cdaemon, redis, how):
    with Client(cdaemon.socket) as c:
        token, _ = hold_token(c, "seat", "rd", ["1"])
        redis.stop() if how == "stopped" else redis.pause()
        try:
            r = confirm(c, "seat", "rd", ["1"], token, "k", timeout_ms=5000)
        finally:
            if how == "paused":
                redis.resume()
    assert code_name(r.code) == "UNAVAILABLE", r.message
    nothing_written(pgdb, "seat", "rd", "k")


def test_failure_between_insert_and_commit_rolls_back(pgdb, cdaemon):
    """The confirm's session is killed after it inserted a claim and before
    it could commit: no success is answered and nothing stays written."""
    with Client(cdaemon.socket) as c:
        token, _ = hold_token(c, "seat", "mid", ["5", "7"])
        blocker = block_claim(pgdb, "seat", "mid", "7")
        try:
            send_confirm(c, "seat", "mid", ["5", "7"], token, "K", timeout_ms=20000,
                         correlation_id="mid-1")
            [pid] = wait_blocked(pgdb)
            # It waits inside its claim INSERT (on the blocker's transaction),
            # its claim on "5" already written but not committed.
            assert pgdb.value("SELECT wait_event FROM pg_stat_activity WHERE pid = %d"
                              % pid) == "transactionid"
            pgdb.query("SELECT pg_terminate_backend(%d)" % pid)
            r = c.recv()
        finally:
            blocker.query("ROLLBACK")
            blocker.close()
        assert code_name(r.code) == "UNAVAILABLE", r.message
        assert "nothing was committed" in r.message
        nothing_written(pgdb, "seat", "mid", "K")
        assert "db=rollback" in log_line(cdaemon, "mid-1")
        # The hold is still ours (stretched to the confirm window): the retry
        # the answer invites goes through, once the pool has a connection
        # again (the terminated one reconnects in the background).
        wait_for(lambda: c.health().health.postgres == "up", what="postgres up")
        r = confirm(c, "seat", "mid", ["5", "7"], token, "K")
        assert code_name(r.code) == "OK", r.message
        assert len(pgdb.claims("seat", "mid")) == 2


def test_failure_at_commit_rolls_back(pgdb, cdaemon):
    """A deferred constraint fails at COMMIT, after the function returned its
    rows: the daemon must not take those rows for a success."""
    pgdb.query("""
        CREATE FUNCTION public.fail_at_commit() RETURNS trigger LANGUAGE plpgsql
        AS $$ BEGIN RAISE EXCEPTION 'injected failure at commit'; END $$;
        CREATE CONSTRAINT TRIGGER fail_at_commit AFTER INSERT ON holdfast.claims
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
            WHEN (NEW.partition = 'at-commit') EXECUTE FUNCTION public.fail_at_commit();""")
    with Client(cdaemon.socket) as c:
        token, _ = hold_token(c, "seat", "at-commit", ["1"])
        r = confirm(c, "seat", "at-commit", ["1"], token, "K", correlation_id="commit-1")
    assert code_name(r.code) not in ("OK", "CONFLICT"), r.message
    assert "nothing was committed" in r.message
    nothing_written(pgdb, "seat", "at-commit", "K")
    line = log_line(cdaemon, "commit-1")
    assert "db=rollback" in line and "after=" not in line


def test_mark_failing_after_commit_still_answers_confirmed(pgdb, make_daemon, redis):
    """Redis freezes between the COMMIT and the mark of the hold. The mark
    may not outlive the request (Redis' own timeout here is longer than the
    request's deadline): the answer is still OK, the failure logged and
    counted."""
    d = make_daemon(namespaces=pgh.NAMESPACES, top_extra=pgdb.config(),
                    redis_extra="command_timeout_ms = 10000,")
    with Client(d.socket, timeout=30) as c:
        token, fence = hold_token(c, "seat", "mark", ["1"])
        blocker = block_claim(pgdb, "seat", "mark", "1")
        try:
            send_confirm(c, "seat", "mark", ["1"], token, "K", timeout_ms=2500,
                         correlation_id="mark-1")
            wait_blocked(pgdb)
            redis.pause()
            try:
                blocker.query("ROLLBACK")
                r = c.recv()
            finally:
                redis.resume()
        finally:
            blocker.close()
        assert code_name(r.code) == "OK", r.message
        assert r.confirm.fence == fence and not r.confirm.replayed
        line = log_line(d, "mark-1")
        assert "db=commit" in line and "after=failed" in line
        assert "the redis update after it failed" in d.log_text()
        metrics = harness.parse_metrics(c.metrics())
        assert metrics["holdfast_release_after_confirm_failed_total"] == 1
    assert pgdb.claims("seat", "mark") == [("1", str(fence), "", "K")]


def test_response_lost_after_commit_retry_replays(pgdb, cdaemon):
    """The client goes away right after sending: the confirm still commits,
    and the retry with the same key gets the same claim, not a second one."""
    c = Client(cdaemon.socket)
    token, fence = hold_token(c, "seat", "lost", ["3", "4"])
    send_confirm(c, "seat", "lost", ["3", "4"], token, "K", "ref")
    c.close()
    wait_for(lambda: len(pgdb.claims("seat", "lost")) == 2, what="the claims to commit")
    cdaemon.wait_log("op=confirm")
    before = pgdb.claims("seat", "lost")
    with Client(cdaemon.socket) as c:
        r = confirm(c, "seat", "lost", ["3", "4"], token, "K", "ref")
    assert code_name(r.code) == "OK", r.message
    assert r.confirm.replayed and r.confirm.fence == fence
    assert sorted(cl.resource_id for cl in r.confirm.claims) == ["3", "4"]
    assert pgdb.claims("seat", "lost") == before
    assert pgdb.value("SELECT count(*) FROM holdfast.idempotency") == "1"


@pytest.fixture
def pgproxy():
    proxy = pgh.PgProxy(pgh.cluster())
    yield proxy
    proxy.close()


@pytest.mark.parametrize("when", ["after_commit", "before_commit"])
def test_connection_lost_during_commit_is_settled_before_answering(pgdb, pgproxy, make_daemon,
                                                                  when):
    """The daemon's connection dies while its confirm is at COMMIT: the
    result (if any) never arrives. Before answering, the daemon asks on a
    fresh connection: committed -> the confirm's own answer (and the hold is
    marked); still running -> that process is ended, nothing committed ->
    UNAVAILABLE, and the retry with the same key goes through."""
    d = make_daemon(namespaces=pgh.NAMESPACES, top_extra=pgdb.config(pool_size=1, proxy=pgproxy))
    with Client(d.socket, timeout=30) as c:
        token, fence = hold_token(c, "seat", "doubt", ["1"])
        blocker = block_claim(pgdb, "seat", "doubt", "1")
        try:
            send_confirm(c, "seat", "doubt", ["1"], token, "K", "ref", timeout_ms=15000,
                         correlation_id="doubt-1")
            [pid] = wait_blocked(pgdb)
            assert pgproxy.freeze()
            if when == "after_commit":
                blocker.query("ROLLBACK")
                wait_for(lambda: pgdb.claims("seat", "doubt"), what="the confirm to commit")
                wait_for(lambda: pgproxy.withheld() > 0, what="its result to be withheld")
            pgproxy.cut()
            r = c.recv()
        finally:
            blocker.close()
        line = log_line(d, "doubt-1")
        metrics = harness.parse_metrics(c.metrics())
        assert metrics["holdfast_confirm_in_doubt_total"] == 1
        if when == "after_commit":
            assert code_name(r.code) == "OK", r.message
            assert r.confirm.fence == fence and not r.confirm.replayed
            assert "db=commit" in line and "after=marked" in line
            assert "in-doubt outcome settled from the idempotency record: committed" in d.log_text()
            assert c.status("seat", "doubt", ["1"]).status.resources[0].state == \
                harness.pb().RESOURCE_STATE_CONFIRMED
        else:
            assert code_name(r.code) == "UNAVAILABLE", r.message
            assert "did not commit" in r.message and "db=rollback" in line
            wait_for(lambda: pid not in pgdb.daemon_backends(), what="the old process to end")
            nothing_written(pgdb, "seat", "doubt", "K")
        r = confirm(c, "seat", "doubt", ["1"], token, "K", "ref")
        assert code_name(r.code) == "OK", r.message
        assert r.confirm.replayed == (when == "after_commit")
    assert pgdb.claims("seat", "doubt") == [("1", str(fence), "ref", "K")]


def test_stuck_statement_is_ended_not_left_to_commit_later(pgdb, cdaemon):
    """The server process running the confirm freezes past the deadline. The
    daemon answers DEADLINE_EXCEEDED, ends that process and settles the
    outcome (did not commit): it cannot commit behind the caller's back."""
    with Client(cdaemon.socket, timeout=30) as c:
        token, _ = hold_token(c, "seat", "stuck", ["1"])
        blocker = block_claim(pgdb, "seat", "stuck", "1")
        try:
            send_confirm(c, "seat", "stuck", ["1"], token, "K", timeout_ms=1500,
                         correlation_id="stuck-1")
            [pid] = wait_blocked(pgdb)
            os.kill(pid, signal.SIGSTOP)
            try:
                blocker.query("ROLLBACK")  # the lock is free, but the process is frozen
                r = c.recv()
                assert code_name(r.code) == "DEADLINE_EXCEEDED", r.message
                cdaemon.wait_log("asking the database on another connection")
            finally:
                os.kill(pid, signal.SIGCONT)
        finally:
            blocker.close()
        cdaemon.wait_log("in-doubt outcome settled: it did not commit", timeout=10)
        wait_for(lambda: pid not in pgdb.daemon_backends(), what="the stuck process to end")
        nothing_written(pgdb, "seat", "stuck", "K")
        r = confirm(c, "seat", "stuck", ["1"], token, "K")
        assert code_name(r.code) == "OK", r.message


def test_cancelled_then_resold_seat_refuses_the_old_holders_late_confirm(pgdb, cdaemon, redis):
    key = "hf:{seat:resale}:4"
    with Client(cdaemon.socket) as c:
        old, f_old = hold_token(c, "seat", "resale", ["4"], ttl_ms=50)
        wait_for(lambda: redis.cmd("EXISTS", key) == 0, what="the old hold to expire")
        t2, f2 = hold_token(c, "seat", "resale", ["4"])
        assert code_name(confirm(c, "seat", "resale", ["4"], t2, "buy-2", "second").code) == "OK"
        assert code_name(cancel(c, "seat", "resale", ["4"], "refund-2", "second").code) == "OK"
        # A failover to a replica that still has the old hold brings it back.
        redis.cmd("SET", key, old, "PX", 30000)
        r = confirm(c, "seat", "resale", ["4"], old, "late-1", "first")
        assert code_name(r.code) == "STALE" and r.error.resource_id == "4", r.message
        assert pgdb.claims("seat", "resale") == []

        redis.cmd("DEL", key)
        t3, f3 = hold_token(c, "seat", "resale", ["4"])
        assert code_name(confirm(c, "seat", "resale", ["4"], t3, "buy-3", "third").code) == "OK"
        redis.cmd("SET", key, old, "PX", 30000)
        r = confirm(c, "seat", "resale", ["4"], old, "late-2", "first")
        assert code_name(r.code) == "STALE" and str(f3) in r.message, r.message
    assert pgdb.claims("seat", "resale") == [("4", str(f3), "third", "buy-3")]
    assert pgdb.value("SELECT fence FROM holdfast.fences") == str(f3)
    assert pgdb.idempotency("seat", "late-2")[0][1] == "STALE"


def test_postgres_fast_restart_during_confirms(pgdb, make_daemon):
    d = make_daemon(namespaces=pgh.NAMESPACES, top_extra=pgdb.config(pool_size=3),
                    limits="default_timeout_ms = 5000,")
    results, errors, lock = [], [], threading.Lock()
    stop_at = time.monotonic() + 4.0

    def worker(i):
        try:
            with Client(d.socket, timeout=60) as c:
                n = 0
                while time.monotonic() < stop_at:
                    n += 1
                    seat = "%d-%d" % (i, n)
                    h = c.hold("seat", "restart", [seat])
                    if code_name(h.code) != "OK":
                        errors.append("hold: " + h.message)
                        return
                    key = "k" + seat
                    r = confirm(c, "seat", "restart", [seat], h.hold.token, key, key)
                    with lock:
                        results.append((seat, h.hold.token, key, code_name(r.code)))
                    if code_name(r.code) != "OK":
                        time.sleep(random.uniform(0.01, 0.05))
        except Exception as e:  # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    pgdb.cluster.restart("fast")
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    codes = {code for *_, code in results}
    assert codes <= {"OK", "UNAVAILABLE", "DEADLINE_EXCEEDED"}, codes

    d.wait_ready(timeout=20)
    # Every request answered "confirmed" has its row; no other has one
    # unless its outcome was reported as unknown.
    pgdb.close_admin()
    claims = {r[0]: r[3] for r in pgdb.claims("seat", "restart")}
    for seat, _, key, code in results:
        if code == "OK":
            assert claims.get(seat) == key, (seat, code)
    unknown = [(s, t, k) for s, t, k, code in results if code != "OK"]
    # The retry with the same key settles each of those, once.
    with Client(d.socket, timeout=30) as c:
        for seat, token, key in unknown:
            r = confirm(c, "seat", "restart", [seat], token, key, key)
            assert code_name(r.code) == "OK", (seat, r.message)
        # The daemon recovered without a restart.
        token, _ = hold_token(c, "seat", "restart", ["after"])
        assert code_name(confirm(c, "seat", "restart", ["after"], token, "k-after").code) == "OK"
        metrics = harness.parse_metrics(c.metrics())
    assert metrics["holdfast_postgres_reconnects_total"] >= 1
    claims = pgdb.claims("seat", "restart")
    assert len(claims) == len(results) + 1
    assert len({r[3] for r in claims}) == len(claims)
    assert all(r[3] == "k" + r[0] for r in claims if r[0] != "after")


@pytest.mark.parametrize("which", ["lock_timeout", "statement_timeout"])
def test_slow_database_is_deadline_exceeded_with_nothing_written(pgdb, make_daemon, which):
    d = make_daemon(namespaces=pgh.NAMESPACES, top_extra=pgdb.config(
        statement_timeout_ms=300 if which == "statement_timeout" else 10000))
    with Client(d.socket, timeout=30) as c:
        token, _ = hold_token(c, "seat", "slow", ["1", "2"])
        blocker = block_claim(pgdb, "seat", "slow", "2")
        try:
            r = confirm(c, "seat", "slow", ["1", "2"], token, "K", timeout_ms=1500,
                        correlation_id="slow-1")
            assert code_name(r.code) == "DEADLINE_EXCEEDED", r.message
            # The database's own timeout ended it, inside the request's
            # deadline, with a clean rollback (not the daemon's timer).
            assert "nothing was committed" in r.message
            assert "db=rollback" in log_line(d, "slow-1")
        finally:
            blocker.query("ROLLBACK")
            blocker.close()
        nothing_written(pgdb, "seat", "slow", "K")
        r = confirm(c, "seat", "slow", ["1", "2"], token, "K", timeout_ms=5000)
        assert code_name(r.code) == "OK", r.message


def test_a_hold_confirms_a_resource_once_even_after_a_cancel(pgdb, cdaemon, redis):
    """Confirmed, cancelled, and the same hold comes back (a lagging replica,
    or a daemon that died between COMMIT and the mark): a confirm under a new
    key with that same fence is STALE, not a second claim with one fence."""
    key = "hf:{seat:once}:1"
    with Client(cdaemon.socket) as c:
        token, fence = hold_token(c, "seat", "once", ["1"])
        assert code_name(confirm(c, "seat", "once", ["1"], token, "K1", "o1").code) == "OK"
        assert code_name(cancel(c, "seat", "once", ["1"], "X1", "o1").code) == "OK"
        redis.cmd("SET", key, token, "PX", 30000)
        r = confirm(c, "seat", "once", ["1"], token, "K2", "o2")
        assert code_name(r.code) == "STALE" and r.error.resource_id == "1", r.message
        assert pgdb.claims("seat", "once") == []
        # The first key still replays its own result.
        r = confirm(c, "seat", "once", ["1"], token, "K1", "o1")
        assert code_name(r.code) == "OK" and r.confirm.replayed
