"""Confirm and Cancel against real PostgreSQL and Redis: claims, markers,
idempotency, cancel history, migrations, least privilege, pruning, the
50-client race and the token never reaching PostgreSQL or a log.

The failure paths (concurrency, Redis/PostgreSQL outages, in-doubt commits,
slow database) are in test_confirm_failures.py."""
import os
import random
import threading
import time

import pytest

import harness
import pgharness as pgh
from harness import Client, code_name, pb
from pgharness import cancel, confirm, hold_token, lit


@pytest.fixture
def cdaemon(pgdb, make_daemon):
    return make_daemon(namespaces=pgh.NAMESPACES, top_extra=pgdb.config())


@pytest.fixture
def cclient(cdaemon):
    with Client(cdaemon.socket) as c:
        yield c

MIGRATIONS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon",
                              "sql", "migrations")


def test_confirm_claims_every_id_and_marks_the_hold(pgdb, cdaemon, cclient, redis):
    token, fence = hold_token(cclient, "seat", "run-1", ["12", "13"])
    payload = b"\x00\x01\xfe\xff{\"seats\":2}"
    r = confirm(cclient, "seat", "run-1", ["13", "12"], token, "order-1:confirm",
                reference="order-1", payload=payload)
    assert code_name(r.code) == "OK", r.message
    assert r.confirm.fence == fence and not r.confirm.replayed
    assert [c.resource_id for c in r.confirm.claims] == ["13", "12"]
    assert all(c.fence == fence and c.reference == "order-1" for c in r.confirm.claims)
    assert all(c.confirmed_at_unix_ms > 1_600_000_000_000 for c in r.confirm.claims)

    rows = pgdb.query("SELECT resource, fence, reference, encode(payload, 'hex'), idempotency_key"
                      " FROM holdfast.claims ORDER BY resource")
    assert rows == [(i, str(fence), "order-1", payload.hex(), "order-1:confirm")
                    for i in ("12", "13")]
    assert pgdb.value("SELECT string_agg(resource || '=' || fence, ',' ORDER BY resource)"
                      " FROM holdfast.fences") == "12=%d,13=%d" % (fence, fence)
    assert pgdb.idempotency("seat", "order-1:confirm")[0][:2] == ("confirm", "OK")

    # The holds became confirmed markers: a new Hold is refused at once.
    assert redis.cmd("GET", "hf:{seat:run-1}:12") == "!confirmed:%d" % fence
    assert 0 < redis.cmd("PTTL", "hf:{seat:run-1}:12") <= 86_400_000
    r = cclient.hold("seat", "run-1", ["12"])
    assert code_name(r.code) == "CONFIRMED"
    log = cdaemon.wait_log("op=confirm")
    line = [ln for ln in log.splitlines() if "op=confirm" in ln][0]
    assert "result=OK" in line and "db=commit" in line and "after=marked" in line


def test_plain_namespace_releases_and_postgres_refuses_a_second_claim(pgdb, cclient, redis):
    first, _ = hold_token(cclient, "plain", "run-2", ["7"])
    assert code_name(confirm(cclient, "plain", "run-2", ["7"], first, "k1", "alice").code) == "OK"
    # Marker TTL 0: the hold is simply released, so Redis lets anyone hold again...
    assert redis.cmd("EXISTS", "hf:{plain:run-2}:7") == 0
    second, _ = hold_token(cclient, "plain", "run-2", ["7"])
    # ...and PostgreSQL is the last line: no second claim, nothing half-written.
    r = confirm(cclient, "plain", "run-2", ["7"], second, "k2", "bob")
    assert code_name(r.code) == "CONFLICT" and r.error.resource_id == "7"
    rows = pgdb.claims("plain", "run-2")
    assert len(rows) == 1 and rows[0][2:] == ("alice", "k1")
    assert pgdb.idempotency("plain", "k2")[0][1] == "CONFLICT"
    # The CONFLICT is the key's answer for good: a retry gets it again.
    r = confirm(cclient, "plain", "run-2", ["7"], second, "k2", "bob")
    assert code_name(r.code) == "CONFLICT" and "replayed" in r.message
    assert len(pgdb.claims("plain", "run-2")) == 1


def test_retry_with_the_same_key_replays_the_stored_result(pgdb, cdaemon, cclient):
    token, fence = hold_token(cclient, "seat", "run-3", ["1", "2"])
    first = confirm(cclient, "seat", "run-3", ["1", "2"], token, "key-3", "ref-3", b"p")
    assert code_name(first.code) == "OK"
    # Same request again (the hold is now the confirmed marker): the stored
    # result, not HOLD_LOST or CONFIRMED, and no second write.
    again = confirm(cclient, "seat", "run-3", ["2", "1"], token, "key-3", "ref-3", b"p")
    assert code_name(again.code) == "OK", again.message
    assert again.confirm.replayed
    assert again.confirm.fence == fence
    assert list(again.confirm.claims) == list(first.confirm.claims)
    assert len(pgdb.claims("seat", "run-3")) == 2
    assert pgdb.value("SELECT count(*) FROM holdfast.idempotency") == "1"
    cdaemon.wait_log("db=replay")


def test_retry_after_re_holding_matches_the_first_request(pgdb, cclient):
    """The token is not part of the request hash: the same logical confirm,
    retried under a new hold, is the same request."""
    token, fence = hold_token(cclient, "plain", "run-4", ["9"])
    assert code_name(confirm(cclient, "plain", "run-4", ["9"], token, "key-4", "r").code) == "OK"
    token2, fence2 = hold_token(cclient, "plain", "run-4", ["9"])
    assert fence2 > fence
    r = confirm(cclient, "plain", "run-4", ["9"], token2, "key-4", "r")
    assert code_name(r.code) == "OK" and r.confirm.replayed and r.confirm.fence == fence
    assert pgdb.claims("plain", "run-4") == [("9", str(fence), "r", "key-4")]
    # The replay released the new hold too (owner-checked), as after a commit.
    r = cclient.status("plain", "run-4", ["9"])
    assert r.status.resources[0].state == pb().RESOURCE_STATE_FREE


def test_idempotency_key_reused_with_a_different_request_writes_nothing(pgdb, cclient):
    token, _ = hold_token(cclient, "seat", "run-5", ["1"])
    assert code_name(confirm(cclient, "seat", "run-5", ["1"], token, "k", "r", b"one").code) == "OK"
    before = pgdb.dump()
    # Different payload, through the hold-gone path (the hold is a marker now).
    r = confirm(cclient, "seat", "run-5", ["1"], token, "k", "r", b"two")
    assert code_name(r.code) == "IDEMPOTENCY_MISMATCH" and r.error.field == "idempotency_key"
    # Different payload on a live hold of another seat: through the SQL function.
    token2, _ = hold_token(cclient, "seat", "run-5", ["2"])
    r = confirm(cclient, "seat", "run-5", ["2"], token2, "k", "r", b"one")
    assert code_name(r.code) == "IDEMPOTENCY_MISMATCH"
    assert pgdb.dump() == before
    # The key of a confirm cannot be reused for a cancel either.
    r = cancel(cclient, "seat", "run-5", ["1"], "k", "r")
    assert code_name(r.code) == "IDEMPOTENCY_MISMATCH"
    assert pgdb.dump() == before


def test_a_lost_hold_is_hold_lost_claims_nothing_and_keeps_its_key(pgdb, cdaemon, cclient):
    token, _ = hold_token(cclient, "seat", "run-6", ["1", "2"], ttl_ms=30)
    time.sleep(0.2)
    r = confirm(cclient, "seat", "run-6", ["1", "2"], token, "k6")
    assert code_name(r.code) == "HOLD_LOST" and r.error.resource_id == "1"
    other, _ = hold_token(cclient, "seat", "run-6", ["2"])
    r = confirm(cclient, "seat", "run-6", ["2"], token, "k6b")
    assert code_name(r.code) == "HOLD_LOST" and "held by another" in r.message
    assert pgdb.value("SELECT count(*) FROM holdfast.claims") == "0"
    assert pgdb.value("SELECT count(*) FROM holdfast.fences") == "0"
    # The answer is final: both keys keep HOLD_LOST, so no later attempt with
    # them can commit, even with a fresh hold.
    assert pgdb.value("SELECT string_agg(code, ',' ORDER BY key) FROM holdfast.idempotency"
                      " WHERE key IN ('k6', 'k6b')") == "HOLD_LOST,HOLD_LOST"
    cdaemon.wait_log("db=lost")
    fresh, _ = hold_token(cclient, "seat", "run-6", ["1"])
    r = confirm(cclient, "seat", "run-6", ["1", "2"], fresh, "k6")
    assert code_name(r.code) == "HOLD_LOST" and "replayed" in r.message
    assert pgdb.value("SELECT count(*) FROM holdfast.claims") == "0"


def test_requests_are_validated_before_anything_happens(pgdb, cclient):
    token, _ = hold_token(cclient, "seat", "run-7", ["1"])
    cases = [
        (dict(ns="nonconf"), "FAILED_PRECONDITION", "namespace"),
        (dict(key=""), "INVALID_ARGUMENT", "idempotency_key"),
        (dict(key="has space"), "INVALID_ARGUMENT", "idempotency_key"),
        (dict(key="k" * 129), "INVALID_ARGUMENT", "idempotency_key"),
        (dict(payload=b"x" * 4097), "INVALID_ARGUMENT", "payload"),
        (dict(reference="r" * 257), "INVALID_ARGUMENT", "reference"),
        (dict(token="not-a-token"), "INVALID_ARGUMENT", "token"),
        (dict(ids=["1", "1"]), "INVALID_ARGUMENT", "ids[1]"),
    ]
    for over, code, field in cases:
        a = dict(ns="seat", ids=["1"], token=token, key="k7", reference="r", payload=b"")
        a.update(over)
        if a["ns"] == "nonconf":
            a["token"], _ = hold_token(cclient, "nonconf", "run-7", ["1"])
        r = confirm(cclient, a["ns"], "run-7", a["ids"], a["token"], a["key"], a["reference"],
                    a["payload"])
        assert code_name(r.code) == code, (over, r.message)
        assert r.error.field == field, (over, r.error)
    r = cancel(cclient, "nonconf", "run-7", ["1"], "c7")
    assert code_name(r.code) == "FAILED_PRECONDITION"
    # 4 KiB of payload and 256 bytes of UTF-8 reference are fine.
    r = confirm(cclient, "seat", "run-7", ["1"], token, "k7", "é" * 128, b"x" * 4096)
    assert code_name(r.code) == "OK", r.message
    assert pgdb.value("SELECT count(*) FROM holdfast.claims") == "1"


def test_cancel_keeps_history_and_lets_the_seat_be_sold_again(pgdb, cdaemon, cclient, redis):
    token, fence = hold_token(cclient, "seat", "run-8", ["1", "2"])
    assert code_name(confirm(cclient, "seat", "run-8", ["1", "2"], token, "buy", "o1").code) == "OK"
    r = cancel(cclient, "seat", "run-8", ["1", "2"], "refund-1", "o1")
    assert code_name(r.code) == "OK", r.message
    assert r.cancel.cancelled == 2 and not r.cancel.replayed
    assert pgdb.claims("seat", "run-8") == []
    hist = pgdb.query("SELECT resource, fence, reference, idempotency_key, cancel_reference,"
                      " cancel_idempotency_key, cancelled_at IS NOT NULL"
                      " FROM holdfast.cancelled_claims ORDER BY resource")
    assert hist == [(i, str(fence), "o1", "buy", "o1", "refund-1", "t") for i in "12"]
    # The markers are gone, the fences stay.
    assert redis.cmd("EXISTS", "hf:{seat:run-8}:1") == 0
    assert pgdb.value("SELECT count(*) FROM holdfast.fences WHERE fence = %d" % fence) == "2"
    log = cdaemon.wait_log("after=cleared")
    assert "op=cancel" in log and "db=commit" in log

    r = cancel(cclient, "seat", "run-8", ["1", "2"], "refund-1", "o1")
    assert code_name(r.code) == "OK" and r.cancel.replayed and r.cancel.cancelled == 2
    assert pgdb.value("SELECT count(*) FROM holdfast.cancelled_claims") == "2"

    token2, fence2 = hold_token(cclient, "seat", "run-8", ["1"])
    r = confirm(cclient, "seat", "run-8", ["1"], token2, "buy-again", "o2")
    assert code_name(r.code) == "OK" and fence2 > fence
    assert pgdb.claims("seat", "run-8") == [("1", str(fence2), "o2", "buy-again")]


def test_cancel_is_all_or_nothing_and_scoped_to_its_order(pgdb, cdaemon, cclient, redis):
    token, _ = hold_token(cclient, "seat", "run-9c", ["1", "2"])
    assert code_name(confirm(cclient, "seat", "run-9c", ["1", "2"], token, "buy", "o1").code) == "OK"
    other, _ = hold_token(cclient, "seat", "run-9c", ["4"])
    assert code_name(confirm(cclient, "seat", "run-9c", ["4"], other, "buy-4", "o4").code) == "OK"
    before = pgdb.claims("seat", "run-9c")
    # An id without a claim: nothing is cancelled, the id is named.
    r = cancel(cclient, "seat", "run-9c", ["1", "3"], "c1", "o1")
    assert code_name(r.code) == "NOT_FOUND" and r.error.resource_id == "3", r.message
    # Another order's claim: refused, nothing cancelled.
    r = cancel(cclient, "seat", "run-9c", ["1", "4"], "c2", "o1")
    assert code_name(r.code) == "CONFLICT" and r.error.resource_id == "4", r.message
    r = cancel(cclient, "seat", "run-9c", ["1", "2"], "c3", "someone-else")
    assert code_name(r.code) == "CONFLICT" and r.error.resource_id == "1", r.message
    # No reference at all is refused before anything happens.
    r = cancel(cclient, "seat", "run-9c", ["1", "2"], "c4")
    assert code_name(r.code) == "INVALID_ARGUMENT" and r.error.field == "reference"
    assert pgdb.claims("seat", "run-9c") == before
    assert pgdb.value("SELECT count(*) FROM holdfast.cancelled_claims") == "0"
    assert redis.cmd("EXISTS", "hf:{seat:run-9c}:1") == 1  # the marker stays
    # Each refusal is final for its key.
    r = cancel(cclient, "seat", "run-9c", ["1", "3"], "c1", "o1")
    assert code_name(r.code) == "NOT_FOUND" and "replayed" in r.message
    # The right order cancels exactly its claims.
    r = cancel(cclient, "seat", "run-9c", ["2", "1"], "c5", "o1")
    assert code_name(r.code) == "OK" and r.cancel.cancelled == 2
    assert [c[0] for c in pgdb.claims("seat", "run-9c")] == ["4"]


def test_migrate_twice_and_readiness_follows_the_schema(make_daemon):
    c = pgh.cluster()
    name = c.new_database(template=None)
    try:
        d = make_daemon(namespaces=pgh.NAMESPACES, start=False,
                        top_extra=pgh.PgDatabase(c, name).config())
        d.start(wait_ready=False)
        d.wait_log("run holdfastd --migrate")
        with Client(d.socket) as cl:
            h = cl.health().health
            assert not h.ready and h.postgres == "down" and h.redis == "up"
            token, _ = hold_token(cl, "seat", "m", ["1"])
            r = confirm(cl, "seat", "m", ["1"], token, "k")
            assert code_name(r.code) == "UNAVAILABLE"

        assert c.psql_file(name, pgh.ROLES_SQL).returncode == 0
        first = c.migrate(name)
        assert first.returncode == 0, first.stderr
        assert "applied 0001_schema" in first.stdout and "migrated to version" in first.stdout
        second = c.migrate(name)
        assert second.returncode == 0, second.stderr
        assert "up to date" in second.stdout and "applied" not in second.stdout
        rows = c.admin("SELECT version, name FROM holdfast.schema_migrations ORDER BY 1", name)
        shipped = sorted(f[:-4] for f in os.listdir(MIGRATIONS_DIR) if f.endswith(".sql"))
        assert [r[1] for r in rows] == shipped and shipped[:2] == ["0001_schema", "0002_functions"]

        # The daemon notices without a restart.
        d.wait_ready(timeout=15)
        with Client(d.socket) as cl:
            assert cl.health().health.postgres == "up"
            r = confirm(cl, "seat", "m", ["1"], token, "k")
            assert code_name(r.code) == "OK", r.message
        d.stop()
    finally:
        c.drop_database(name)


def test_migrate_refuses_an_edited_migration(pgdb):
    pgdb.query("UPDATE holdfast.schema_migrations SET checksum = 'edited' WHERE version = 1")
    r = pgdb.cluster.migrate(pgdb.name)
    assert r.returncode == 1 and "must never change" in r.stderr


def test_the_daemon_role_can_only_execute_the_api(pgdb, cclient):
    token, _ = hold_token(cclient, "seat", "run-9", ["1"])
    assert code_name(confirm(cclient, "seat", "run-9", ["1"], token, "k9").code) == "OK"
    app = pgdb.session(pgh.APP)
    try:
        for sql in ("SELECT * FROM holdfast.claims",
                    "DELETE FROM holdfast.claims",
                    "INSERT INTO holdfast.claims VALUES ('seat','x','1',1,'','','k',now())",
                    "UPDATE holdfast.fences SET fence = 0",
                    "SELECT * FROM holdfast.idempotency",
                    "SELECT holdfast.request_hash('a','b','c','{1}','r','')",
                    "SELECT * FROM holdfast.stored_outcome('seat','k9','confirm','')"):
            with pytest.raises(pgh.PgError) as e:
                app.query(sql)
            assert e.value.sqlstate == "42501", sql
        # What it may do, it does only through the functions.
        rows = app.query("SELECT code, replayed FROM holdfast.lookup('confirm', 'seat', 'k9',"
                         " 'run-9', '{1}', '', '')")
        assert rows == [("OK", "t")]
    finally:
        app.close()


def test_old_idempotency_records_are_pruned(pgdb, make_daemon):
    pgdb.query("INSERT INTO holdfast.idempotency VALUES"
               " ('seat', 'old', 'confirm', '\\x00', 'OK', '{}', now() - interval '8 days'),"
               " ('seat', 'new', 'confirm', '\\x00', 'OK', '{}', now())")
    d = make_daemon(namespaces=pgh.NAMESPACES, top_extra=pgdb.config())
    d.wait_log("pruned 1 idempotency records", timeout=15)
    assert pgdb.query("SELECT key FROM holdfast.idempotency") == [("new",)]


@pytest.mark.parametrize("ns", ["seat", "plain"])
def test_fifty_clients_race_for_one_seat(pgdb, make_daemon, ns):
    """50 clients hold-then-confirm one seat for a few seconds, holds expiring
    and being re-taken: exactly one claim, and only its owner was told OK."""
    d = make_daemon(namespaces=pgh.NAMESPACES, top_extra=pgdb.config(pool_size=4),
                    limits="default_timeout_ms = 10000,")
    part = "race-" + ns
    stop_at = time.monotonic() + 3.0
    results, holds, errors, lock = [], [], [], threading.Lock()

    def worker(i):
        rnd = random.Random(i)
        try:
            with Client(d.socket, timeout=60) as c:
                n = 0
                while time.monotonic() < stop_at:
                    n += 1
                    ttl = rnd.randint(20, 120)
                    h = c.hold(ns, part, ["E7"], ttl_ms=ttl)
                    with lock:
                        holds.append(code_name(h.code))
                    if code_name(h.code) != "OK":
                        time.sleep(rnd.uniform(0.001, 0.02))
                        continue
                    time.sleep(rnd.uniform(0, ttl * 2.5) / 1000)  # often past the TTL
                    key = "c%d-%d" % (i, n)
                    r = confirm(c, ns, part, ["E7"], h.hold.token, key, reference=key)
                    with lock:
                        results.append((key, code_name(r.code)))
        except Exception as e:  # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    codes = {c for _, c in results}
    assert codes <= {"OK", "HOLD_LOST", "CONFLICT", "CONFIRMED"}, codes
    told_ok = [k for k, c in results if c == "OK"]
    rows = pgdb.claims(ns, part)
    assert len(rows) == 1, rows
    assert told_ok == [rows[0][2]] and rows[0][3] == told_ok[0]
    if ns == "plain":
        # The hold is released after the commit, so Redis keeps granting it:
        # PostgreSQL is what refused every later confirm.
        assert "CONFLICT" in codes
    else:
        # The confirmed marker refused every later hold.
        assert "CONFIRMED" in holds


def test_tokens_never_reach_postgres_or_a_log(pgdb, cdaemon, cclient, redis):
    tokens = []
    t, _ = hold_token(cclient, "seat", "tok", ["1", "2"])
    tokens.append(t)
    assert code_name(confirm(cclient, "seat", "tok", ["1", "2"], t, "a", "r", b"p").code) == "OK"
    confirm(cclient, "seat", "tok", ["1", "2"], t, "a", "r", b"p")           # replay
    confirm(cclient, "seat", "tok", ["1"], t, "a", "r", b"other")            # mismatch
    t, _ = hold_token(cclient, "plain", "tok", ["1"])
    tokens.append(t)
    confirm(cclient, "plain", "tok", ["1"], t, "b")
    t, _ = hold_token(cclient, "plain", "tok", ["1"])
    tokens.append(t)
    assert code_name(confirm(cclient, "plain", "tok", ["1"], t, "c").code) == "CONFLICT"
    assert code_name(cancel(cclient, "seat", "tok", ["1", "2"], "cancel-tok", "r").code) == "OK"
    t, _ = hold_token(cclient, "seat", "tok", ["1"], ttl_ms=20)
    tokens.append(t)
    time.sleep(0.1)
    assert code_name(confirm(cclient, "seat", "tok", ["1"], t, "e").code) == "HOLD_LOST"
    dump = pgdb.dump()
    assert "tok" in dump and "cancel-tok" in dump  # the dump does hold this test's rows
    assert not harness.randomness_in(dump, list(harness.ISSUED_TOKENS) + tokens)
    cdaemon.wait_log("op=confirm")
    pg_log = pgdb.cluster.log_text()
    assert "holdfast.confirm(" in pg_log  # statements are logged with their parameters
    daemon_log = cdaemon.log_text()
    assert not harness.randomness_in(pg_log, list(harness.ISSUED_TOKENS) + tokens)
    assert not harness.randomness_in(daemon_log, list(harness.ISSUED_TOKENS) + tokens)
