"""A confirm's answer is final (issue 9): one idempotency key never gets two
different definite answers, whatever happens to the attempts made with it.

The scenario, with one seat s1 and one key K:
  1. Hold s1 -> token T.
  2. Another session holds a lock the confirm needs (an uncommitted claim
     row for s1, block_claim).
  3. Confirm(T, K) attempt 1 binds K (its idempotency row is inserted, not
     committed) and waits on that lock.
  4. Attempt 1's caller goes away while its statement runs on: the client
     closes its connection (the daemon stays up), or the daemon is SIGKILLed,
     or SIGTERMed with a drain shorter than the confirm's deadline.
  5. The hold leaves Redis (Redis restarted empty, or its TTL).
  6. Confirm(T, K) attempt 2, while attempt 1 is still blocked: the hold is
     gone, so the daemon calls holdfast.confirm_gone(), which must wait for
     attempt 1 rather than answer HOLD_LOST (the old daemon did, and attempt
     1 then committed: two definite answers for one key).
  7. The blocker finishes (rolls back: attempt 1 commits OK; commits: the
     blocker owns s1 and attempt 1 ends CONFLICT).
  8. Attempt 3 (the same token, the hold gone) and attempt 4 (a fresh hold,
     the same key) must both replay attempt 1's result.

When the daemon dies, attempt 1's statement would normally end with it
(closing the connection ends the server process within
client_connection_check_interval). To keep it running, the first daemon
reaches PostgreSQL through a PgProxy that lingers: the server side of its
connections stays open after the daemon is gone, as when the daemon's host
vanishes. test_attempt_ended_with_the_daemon_is_hold_lost_for_good covers the
ordinary case, where attempt 1 is rolled back and HOLD_LOST is the answer.

Definite answers: OK, HOLD_LOST, CONFIRMED, CONFLICT, STALE,
IDEMPOTENCY_MISMATCH. DEADLINE_EXCEEDED and UNAVAILABLE are not (a retry with
the same key is safe)."""
import os
import signal

import pytest

import pgharness as pgh
from harness import Client, code_name, wait_for
from pgharness import confirm, hold_token, lit, send_confirm
from test_confirm_failures import block_claim, wait_blocked

DEFINITE = {"OK", "HOLD_LOST", "CONFIRMED", "CONFLICT", "STALE", "IDEMPOTENCY_MISMATCH"}
NOT_DEFINITE = {"DEADLINE_EXCEEDED", "UNAVAILABLE"}

# `brief`: the confirm window (the hold's TTL once a confirm has checked it)
# is short, so the hold expires while attempt 1 waits in PostgreSQL.
NAMESPACES = pgh.NAMESPACES + """
    brief = { default_ttl_ms = 30000, min_ttl_ms = 10, max_ttl_ms = 600000,
              confirmable = true, confirm_window_ms = 300 },
"""

PART = "final"
SEAT = "s1"
KEY = "K"
REF = "order-1"
# Longer than steps 4-6 take (stopping a daemon, starting another) even on
# a loaded machine, and under valgrind (HOLDFASTD_WRAPPER), which starts a
# daemon in seconds. Only a failing test waits for it.
ATTEMPT1_MS = 20000 if os.environ.get("HOLDFASTD_WRAPPER") else 6000
ATTEMPT2_MS = 1000
DRAIN_MS = 300      # < ATTEMPT1_MS: the drain gives up on attempt 1


def pg_config(db, proxy=None):
    """Attempt 1 must be ended by its own deadline (lock_timeout), not by the
    connection's statement_timeout (2 s by default)."""
    return db.config(statement_timeout_ms=ATTEMPT1_MS + 5000, proxy=proxy)


@pytest.fixture
def pgproxy():
    proxy = pgh.PgProxy(pgh.cluster())
    yield proxy
    proxy.close()


def reap(d, timeout=15.0):
    """Wait for a daemon that was signalled to exit; check its log like
    Daemon.stop() does, and take it off the fixture's list of daemons to
    stop. Returns the exit status (-9 for SIGKILL)."""
    try:
        rc = d.proc.wait(timeout)
    finally:
        d.log.close()
        d.proc = None
    d.check_log()
    return rc


def kill_daemon(d, how):
    if how == "daemon_sigkill":
        d.signal(signal.SIGKILL)
        assert reap(d) == -signal.SIGKILL
    else:
        d.signal(signal.SIGTERM)
        rc = reap(d)
        text = d.log_text()
        assert rc == 0, text[-3000:]
        assert "drain: 1 requests still in flight after %d ms" % DRAIN_MS in text, text[-3000:]


def hold_key(ns):
    return "hf:{%s:%s}:%s" % (ns, PART, SEAT)


def lose_hold(redis, ns, how):
    if how == "redis_restart":
        redis.restart()
    else:
        wait_for(lambda: redis.cmd("EXISTS", hold_key(ns)) == 0, timeout=5,
                 what="the hold to expire")
    assert redis.cmd("EXISTS", hold_key(ns)) == 0


def still_blocked(db, pid):
    return pid in db.daemon_backends(waiting_on_lock=True)


def statement_over(db, pid):
    """The server process that ran attempt 1 is gone or idle."""
    state = db.value("SELECT state FROM pg_stat_activity WHERE pid = %d" % pid)
    return state is None or state.startswith("idle")


def answer(r):
    """(code, replayed) of a confirm response."""
    code = code_name(r.code)
    if code == "OK":
        return code, r.confirm.replayed
    return code, "(replayed)" in r.message


def check_final(db, ns, key, answers, fence):
    """The issue's invariants over every answer given to `key`; returns the
    final (definite) answer."""
    codes = [code for _, code, _ in answers]
    assert set(codes) <= DEFINITE | NOT_DEFINITE, answers
    definite = {code for code in codes if code in DEFINITE}
    assert len(definite) == 1, "key %s got different definite answers: %s" % (key, answers)
    [final] = definite
    live = db.query("SELECT resource, fence FROM holdfast.claims WHERE ns = %s"
                    " AND idempotency_key = %s" % (lit(ns), lit(key)))
    cancelled = db.query("SELECT resource FROM holdfast.cancelled_claims WHERE ns = %s"
                         " AND idempotency_key = %s" % (lit(ns), lit(key)))
    if final == "OK":
        assert live == [(SEAT, str(fence))], live
    else:
        assert live == [] and cancelled == [], (final, live, cancelled)
    [(op, stored, _, _)] = db.idempotency(ns, key)
    assert (op, stored) == ("confirm", final)
    return final


@pytest.mark.parametrize("blocker_ends", ["rolls_back", "commits"])
@pytest.mark.parametrize("lost", ["redis_restart", "ttl"])
@pytest.mark.parametrize("caller", ["client_closes", "daemon_sigkill", "daemon_sigterm"])
def test_a_confirms_answer_is_final(pgdb, pgproxy, make_daemon, redis, caller, lost,
                                    blocker_ends):
    ns = "brief" if lost == "ttl" else "seat"
    dies = caller != "client_closes"
    d1 = make_daemon(namespaces=NAMESPACES,
                     top_extra=pg_config(pgdb, pgproxy if dies else None),
                     limits="drain_timeout_ms = %d," % DRAIN_MS if dies else "")
    answers = []  # (attempt, code, replayed)

    c1 = Client(d1.socket)
    token, fence = hold_token(c1, ns, PART, [SEAT])
    blocker = block_claim(pgdb, ns, PART, SEAT)
    try:
        send_confirm(c1, ns, PART, [SEAT], token, KEY, REF, timeout_ms=ATTEMPT1_MS,
                     correlation_id="attempt-1")
        [pid1] = wait_blocked(pgdb)
        assert pgdb.idempotency(ns, KEY) == []  # bound, not committed

        # 4. attempt 1's caller goes away; its statement runs on.
        if dies:
            pgproxy.linger()
        c1.close()
        if dies:
            kill_daemon(d1, caller)
        # 5. the hold leaves Redis.
        lose_hold(redis, ns, lost)
        d2 = make_daemon(namespaces=NAMESPACES, top_extra=pg_config(pgdb)) if dies else d1
        d2.wait_ready()
        assert still_blocked(pgdb, pid1), "attempt 1 ended before attempt 2 was sent"

        # 6. attempt 2: it must not answer for the key while attempt 1 may
        # still commit under it.
        with Client(d2.socket) as c2:
            r = confirm(c2, ns, PART, [SEAT], token, KEY, REF, timeout_ms=ATTEMPT2_MS,
                        correlation_id="attempt-2")
        answers.append((2,) + answer(r))
        attempt2_message = r.message
        assert still_blocked(pgdb, pid1), "attempt 1 ended before the blocker did"

        # 7. the blocker finishes; attempt 1 goes on to its end.
        blocker.query("ROLLBACK" if blocker_ends == "rolls_back" else "COMMIT")
    finally:
        blocker.close()
    wait_for(lambda: statement_over(pgdb, pid1), timeout=10, what="attempt 1 to end")
    if not dies:
        d1.wait_log("cid=attempt-1 ")

    # 8. attempt 3: the same token, the hold still gone.
    with Client(d2.socket) as c3:
        r = confirm(c3, ns, PART, [SEAT], token, KEY, REF, correlation_id="attempt-3")
        answers.append((3,) + answer(r))
        # attempt 4: a fresh hold (Redis does not know of any claim), same key.
        h = c3.hold(ns, PART, [SEAT])
        assert code_name(h.code) == "OK", h.message
        assert h.hold.fence > fence
        r = confirm(c3, ns, PART, [SEAT], h.hold.token, KEY, REF, correlation_id="attempt-4")
        answers.append((4,) + answer(r))
        if code_name(r.code) == "CONFLICT":
            assert r.error.resource_id == SEAT

    final = check_final(pgdb, ns, KEY, answers, fence)
    # Attempt 2 could not know attempt 1's result: it had to time out.
    assert answers[0][1] in NOT_DEFINITE, (attempt2_message, answers)
    assert final == ("OK" if blocker_ends == "rolls_back" else "CONFLICT"), answers
    assert [(a, rep) for a, _, rep in answers[1:]] == [(3, True), (4, True)], answers
    if final == "CONFLICT":
        assert pgdb.claims(ns, PART) == [(SEAT, "1", "blocker", "blocker")]


@pytest.mark.parametrize("blocker_ends", ["rolls_back", "commits"])
def test_attempt_2_waits_for_attempt_1_and_replays_it(pgdb, make_daemon, redis, blocker_ends):
    """Attempt 2 with a deadline long enough: it waits on the key that
    attempt 1 bound, and answers attempt 1's result once that commits."""
    d = make_daemon(namespaces=NAMESPACES, top_extra=pg_config(pgdb))
    answers = []
    c1 = Client(d.socket)
    token, fence = hold_token(c1, "seat", PART, [SEAT])
    blocker = block_claim(pgdb, "seat", PART, SEAT)
    try:
        send_confirm(c1, "seat", PART, [SEAT], token, KEY, REF, timeout_ms=ATTEMPT1_MS,
                     correlation_id="attempt-1")
        [pid1] = wait_blocked(pgdb)
        c1.close()
        redis.cmd("FLUSHALL")
        with Client(d.socket) as c2:
            send_confirm(c2, "seat", PART, [SEAT], token, KEY, REF, timeout_ms=ATTEMPT1_MS,
                         correlation_id="attempt-2")
            # attempt 2 waits on attempt 1's key, attempt 1 on the blocker
            pids = wait_blocked(pgdb, 2)
            assert pid1 in pids
            blocker.query("ROLLBACK" if blocker_ends == "rolls_back" else "COMMIT")
            r = c2.recv()
            answers.append((2,) + answer(r))
    finally:
        blocker.close()
    wait_for(lambda: statement_over(pgdb, pid1), timeout=10, what="attempt 1 to end")
    with Client(d.socket) as c3:
        r = confirm(c3, "seat", PART, [SEAT], token, KEY, REF, correlation_id="attempt-3")
        answers.append((3,) + answer(r))
    final = check_final(pgdb, "seat", KEY, answers, fence)
    assert final == ("OK" if blocker_ends == "rolls_back" else "CONFLICT"), answers
    assert [rep for _, _, rep in answers] == [True, True], answers


@pytest.mark.parametrize("caller", ["daemon_sigkill", "daemon_sigterm"])
def test_attempt_ended_with_the_daemon_is_hold_lost_for_good(pgdb, make_daemon, redis, caller):
    """The daemon dies and, with a direct connection, its server process
    notices (client_connection_check_interval) and rolls attempt 1 back.
    The key was never answered: attempt 2 binds it to HOLD_LOST, and that
    stays K's answer after the blocker goes away and the seat is free."""
    d1 = make_daemon(namespaces=NAMESPACES, top_extra=pg_config(pgdb),
                     limits="drain_timeout_ms = %d," % DRAIN_MS)
    answers = []
    c1 = Client(d1.socket)
    token, fence = hold_token(c1, "seat", PART, [SEAT])
    blocker = block_claim(pgdb, "seat", PART, SEAT)
    try:
        send_confirm(c1, "seat", PART, [SEAT], token, KEY, REF, timeout_ms=ATTEMPT1_MS,
                     correlation_id="attempt-1")
        [pid1] = wait_blocked(pgdb)
        c1.close()
        kill_daemon(d1, caller)
        wait_for(lambda: pid1 not in pgdb.daemon_backends(), timeout=10,
                 what="attempt 1's server process to end with the daemon")
        assert pgdb.idempotency("seat", KEY) == []
        redis.cmd("FLUSHALL")
        d2 = make_daemon(namespaces=NAMESPACES, top_extra=pg_config(pgdb))
        with Client(d2.socket) as c2:
            r = confirm(c2, "seat", PART, [SEAT], token, KEY, REF, timeout_ms=ATTEMPT2_MS,
                        correlation_id="attempt-2")
            answers.append((2,) + answer(r))
            assert answers[-1][1:] == ("HOLD_LOST", False), (r.message, answers)
            blocker.query("ROLLBACK")
            r = confirm(c2, "seat", PART, [SEAT], token, KEY, REF, correlation_id="attempt-3")
            answers.append((3,) + answer(r))
            h = c2.hold("seat", PART, [SEAT])
            assert code_name(h.code) == "OK", h.message
            r = confirm(c2, "seat", PART, [SEAT], h.hold.token, KEY, REF,
                        correlation_id="attempt-4")
            answers.append((4,) + answer(r))
    finally:
        blocker.close()
    assert check_final(pgdb, "seat", KEY, answers, fence) == "HOLD_LOST"
    assert [rep for _, _, rep in answers] == [False, True, True], answers
    assert pgdb.claims("seat", PART) == []


def test_hold_lost_is_final(pgdb, make_daemon, redis):
    """After HOLD_LOST for K, a fresh hold and a confirm with K answer
    HOLD_LOST again (replayed) and claim nothing; a new key claims the seat."""
    d = make_daemon(namespaces=NAMESPACES, top_extra=pg_config(pgdb))
    answers = []
    with Client(d.socket) as c:
        token, fence = hold_token(c, "seat", PART, [SEAT], ttl_ms=50)
        wait_for(lambda: redis.cmd("EXISTS", hold_key("seat")) == 0, what="the hold to expire")
        r = confirm(c, "seat", PART, [SEAT], token, KEY, REF)
        answers.append((1,) + answer(r))
        assert answers[-1][1:] == ("HOLD_LOST", False), r.message
        assert r.error.resource_id == SEAT

        t2, f2 = hold_token(c, "seat", PART, [SEAT])
        r = confirm(c, "seat", PART, [SEAT], t2, KEY, REF)
        answers.append((2,) + answer(r))
        assert answers[-1][1:] == ("HOLD_LOST", True), r.message
        assert pgdb.claims("seat", PART) == []
        # The hold of t2 is untouched: a confirm with a new key claims it.
        r = confirm(c, "seat", PART, [SEAT], t2, "K2", REF)
        assert code_name(r.code) == "OK" and not r.confirm.replayed, r.message
    assert check_final(pgdb, "seat", KEY, answers, fence) == "HOLD_LOST"
    assert pgdb.claims("seat", PART) == [(SEAT, str(f2), REF, "K2")]
