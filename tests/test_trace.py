"""W3C trace context (Request.traceparent): the daemon logs the trace id
beside the correlation id, passes the traceparent to PostgreSQL as a comment
on the Confirm and Cancel statements (and on the statement that settles an
in-doubt one), and ignores an invalid traceparent: never an error, never in
a log or in SQL text."""
import os
import re
import secrets
import signal
import struct

import pytest

import harness
import pgharness as pgh
from harness import Client, code_name, pb, wait_for
from pgharness import cancel, confirm, hold_token, lit



def STATUS():
    """A request that is logged at info (Health and Metrics are probes, logged
    at debug unless log.probes is set)."""
    return pb().StatusRequest(namespace="seat", partition="trace", ids=["1"])

def new_traceparent(flags="01", version="00"):
    return "%s-%s-%s-%s" % (version, secrets.token_hex(16), secrets.token_hex(8), flags)


def trace_id(tp):
    return tp.split("-")[1]


def request_line(daemon, cid):
    text = daemon.wait_log("req cid=%s " % cid)
    return [ln for ln in text.splitlines() if "req cid=%s " % cid in ln][0]


@pytest.fixture
def cdaemon(pgdb, make_daemon):
    return make_daemon(namespaces=pgh.NAMESPACES, top_extra=pgdb.config())


# ---- the request log line ----------------------------------------------------


def test_request_line_carries_the_trace_id_next_to_the_correlation_id(daemon, client):
    tp = new_traceparent()
    r = client.hold("seat", "tr-1", ["1"], correlation_id="tr-hold", traceparent=tp)
    assert code_name(r.code) == "OK", r.message
    line = request_line(daemon, "tr-hold")
    assert "req cid=tr-hold trace=%s op=hold " % trace_id(tp) in line
    # The trace id only: the parent id and flags are not the log's business.
    assert tp not in line and tp.split("-")[2] not in line

    r = client.call(status=STATUS(), correlation_id="tr-health",
                    traceparent=new_traceparent(flags="00"))
    assert code_name(r.code) == "OK"
    assert re.search(r"req cid=tr-health trace=[0-9a-f]{32} op=status ",
                     request_line(daemon, "tr-health"))


def test_without_a_traceparent_the_line_is_as_before(daemon, client):
    client.call(status=STATUS(), correlation_id="tr-none")
    line = request_line(daemon, "tr-none")
    assert "req cid=tr-none op=status " in line and "trace=" not in line


def test_a_generated_correlation_id_still_gets_the_trace_id(daemon, client):
    tp = new_traceparent()
    r = client.call(status=STATUS(), traceparent=tp)
    assert r.correlation_id
    assert "req cid=%s trace=%s op=status " % (r.correlation_id, trace_id(tp)) in \
        request_line(daemon, r.correlation_id)


def test_a_higher_version_is_read_as_the_spec_says(daemon, client):
    tp = new_traceparent(version="01", flags="03") + "-what-comes-later"
    r = client.call(status=STATUS(), correlation_id="tr-v1", traceparent=tp)
    assert code_name(r.code) == "OK"
    assert "trace=%s op=status" % trace_id(tp) in request_line(daemon, "tr-v1")


INVALID = [
    "garbage",
    "00-" + "0" * 32 + "-00f067aa0ba902b7-01",                       # all-zero trace id
    "00-4bf92f3577b34da6a3ce929d0e0e4736-" + "0" * 16 + "-01",       # all-zero parent id
    "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",       # uppercase
    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",       # version ff
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",     # 00 with more
    "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",      # more, no dash
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",          # no flags
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' */ DROP TABLE x; --",
    "x" * 5000,
]


@pytest.mark.parametrize("bad", INVALID, ids=range(len(INVALID)))
def test_an_invalid_traceparent_is_ignored_never_an_error(daemon, client, bad):
    cid = "tr-bad-%d" % INVALID.index(bad)
    r = client.hold("seat", "tr-bad", [str(INVALID.index(bad))], correlation_id=cid,
                    traceparent=bad)
    assert code_name(r.code) == "OK", r.message
    assert r.correlation_id == cid
    line = request_line(daemon, cid)
    assert " trace=invalid op=hold " in line
    assert bad not in daemon.log_text() and "4bf92f3577b34da6" not in daemon.log_text().lower()


def test_a_traceparent_that_is_not_utf8_is_refused_like_every_string(daemon, client):
    """Not a traceparent rule: a proto3 string must be UTF-8, and the daemon
    refuses any string field that is not (field 4, wire type 2)."""
    body = pb().Request(id=7, correlation_id="tr-utf8",
                        health=pb().HealthRequest()).SerializeToString() + b"\x22\x02\xff\xfe"
    client.send_raw(struct.pack(">I", len(body)) + body)
    r = client.recv()
    assert r.id == 7
    assert code_name(r.code) == "INVALID_ARGUMENT" and r.error.field == "traceparent"
    # The connection stays usable.
    assert code_name(client.call(health=pb().HealthRequest()).code) == "OK"


# ---- PostgreSQL ------------------------------------------------------------------


def statement_lines(pg_log, needle):
    return [ln for ln in pg_log.splitlines() if needle in ln]


def test_confirm_and_cancel_statements_carry_the_traceparent_comment(pgdb, cdaemon):
    tp_confirm, tp_cancel = new_traceparent(), new_traceparent(flags="00")
    with Client(cdaemon.socket) as c:
        token, _ = hold_token(c, "seat", "tr-pg", ["1", "2"])
        r = confirm(c, "seat", "tr-pg", ["1", "2"], token, "tr-pg:confirm", "ref",
                    correlation_id="tr-pg-confirm", traceparent=tp_confirm)
        assert code_name(r.code) == "OK", r.message
        r = cancel(c, "seat", "tr-pg", ["1", "2"], "tr-pg:cancel", "ref",
                   correlation_id="tr-pg-cancel", traceparent=tp_cancel)
        assert code_name(r.code) == "OK", r.message
    assert "trace=%s op=confirm" % trace_id(tp_confirm) in request_line(cdaemon, "tr-pg-confirm")
    assert "trace=%s op=cancel" % trace_id(tp_cancel) in request_line(cdaemon, "tr-pg-cancel")
    pg_log = pgdb.cluster.log_text()
    [line] = statement_lines(pg_log, tp_confirm)
    assert "/* traceparent='%s' */ SELECT " % tp_confirm in line
    assert "holdfast.confirm(" in line
    [line] = statement_lines(pg_log, tp_cancel)
    assert "/* traceparent='%s' */ SELECT " % tp_cancel in line
    assert "holdfast.cancel(" in line


def test_a_higher_version_reaches_postgresql_as_version_00(pgdb, cdaemon):
    tp = new_traceparent(version="02", flags="ff") + "-later"
    with Client(cdaemon.socket) as c:
        token, _ = hold_token(c, "seat", "tr-v2", ["1"])
        r = confirm(c, "seat", "tr-v2", ["1"], token, "tr-v2:confirm", traceparent=tp)
        assert code_name(r.code) == "OK", r.message
    parts = tp.split("-")
    normalized = "00-%s-%s-01" % (parts[1], parts[2])  # only the sampled flag carries over
    [line] = statement_lines(pgdb.cluster.log_text(), parts[1])
    assert "/* traceparent='%s' */ SELECT " % normalized in line


def test_without_or_with_an_invalid_traceparent_no_comment_reaches_postgresql(pgdb, cdaemon):
    bad = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' */ SELECT 1; /*"
    with Client(cdaemon.socket) as c:
        token, _ = hold_token(c, "seat", "tr-none", ["1"])
        r = confirm(c, "seat", "tr-none", ["1"], token, "tr-none:k1", traceparent=bad,
                    correlation_id="tr-none-bad")
        assert code_name(r.code) == "OK", r.message
        token, _ = hold_token(c, "seat", "tr-none", ["2"])
        r = confirm(c, "seat", "tr-none", ["2"], token, "tr-none:k2")
        assert code_name(r.code) == "OK", r.message
    assert "trace=invalid op=confirm" in request_line(cdaemon, "tr-none-bad")
    pg_log = pgdb.cluster.log_text()
    assert "4bf92f3577b34da6a3ce929d0e0e4736" not in pg_log
    keys = [ln for ln in pg_log.splitlines() if "tr-none:k" in ln]
    assert len(keys) >= 2  # the parameters, logged with each statement
    for ln in statement_lines(pg_log, "holdfast.confirm("):
        if "traceparent=" in ln:
            assert re.search(r"/\* traceparent='00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}' \*/ ", ln)


def test_the_traceparent_shows_in_pg_stat_activity_and_on_the_resolve(pgdb, cdaemon):
    """A confirm blocked in PostgreSQL shows its traceparent in
    pg_stat_activity; after it is stopped past its deadline, the statement
    that settles its outcome (holdfast.resolve) carries it too."""
    tp = new_traceparent()
    with Client(cdaemon.socket, timeout=30) as c:
        token, _ = hold_token(c, "seat", "tr-stuck", ["1"])
        blocker = pgdb.session()
        blocker.query("BEGIN")
        blocker.query("INSERT INTO holdfast.claims VALUES ('seat', 'tr-stuck', '1', 1,"
                      " 'blocker', '', 'blocker', now())")
        try:
            pgh.send_confirm(c, "seat", "tr-stuck", ["1"], token, "K", timeout_ms=1500,
                             correlation_id="tr-stuck-1", traceparent=tp)
            [pid] = wait_for(lambda: pgdb.daemon_backends(waiting_on_lock=True) or None,
                             timeout=20, what="the confirm to wait on a lock")
            query = pgdb.value("SELECT query FROM pg_stat_activity WHERE pid = %d" % pid)
            assert query.startswith("/* traceparent='%s' */ SELECT " % tp)
            os.kill(pid, signal.SIGSTOP)
            try:
                blocker.query("ROLLBACK")
                r = c.recv()
                assert code_name(r.code) == "DEADLINE_EXCEEDED", r.message
                cdaemon.wait_log("asking the database on another connection")
            finally:
                os.kill(pid, signal.SIGCONT)
        finally:
            blocker.close()
        cdaemon.wait_log("in-doubt outcome settled", timeout=10)
    assert "trace=%s op=confirm" % trace_id(tp) in request_line(cdaemon, "tr-stuck-1")
    resolves = statement_lines(pgdb.cluster.log_text(), "holdfast.resolve(")
    assert any("/* traceparent='%s' */ SELECT " % tp in ln for ln in resolves), resolves
