"""Confirm statements run as prepared statements of the daemon's sessions
(pg_pool.c, postgres.prepared_statements), against a real PostgreSQL whose
log (log_statement = all) names what each Execute ran: "execute hf_<n>" for
our prepared statements, "execute <unnamed>" for unprepared ones."""
import os
import re

import pgharness as pgh
from harness import Client, code_name, wait_for
from pgharness import confirm, hold_token


def confirm_daemon(make_daemon, pgdb, extra=""):
    config = pgdb.config(pool_size=1)
    if extra:
        config = config.replace(" },", ", %s }," % extra, 1)
    return make_daemon(namespaces=pgh.NAMESPACES, top_extra=config)


def confirms(c, partition, n, **kw):
    for i in range(n):
        token, _ = hold_token(c, "seat", partition, ["s%d" % i])
        r = confirm(c, "seat", partition, ["s%d" % i], token, "%s-%d" % (partition, i), **kw)
        assert code_name(r.code) == "OK", r.message


def executions(pgdb, since):
    """The Execute lines of holdfast.confirm() logged since offset `since`."""
    text = pgdb.cluster.log_text()[since:]
    return re.findall(r"execute (\S+): .*holdfast\.confirm\(", text)


def test_confirms_are_prepared_once_per_session(pgdb, make_daemon):
    d = confirm_daemon(make_daemon, pgdb)
    since = len(pgdb.cluster.log_text())
    with Client(d.socket) as c:
        confirms(c, "prep", 5)
    run = executions(pgdb, since)
    # One session: parsed once, then every confirm executes that statement.
    assert run == ["hf_1"] * 5, run
    assert len(pgdb.claims("seat", "prep")) == 5


def test_a_new_session_prepares_again(pgdb, make_daemon):
    d = confirm_daemon(make_daemon, pgdb)
    with Client(d.socket) as c:
        confirms(c, "again", 2)
        # The session goes; its statements go with it. The pool's next
        # session prepares its own before the next confirm.
        pgdb.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                   "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        since = len(pgdb.cluster.log_text())
        attempts = iter(range(1000))

        def one_confirm():
            i = next(attempts)
            token, _ = hold_token(c, "seat", "again", ["x%d" % i])
            r = confirm(c, "seat", "again", ["x%d" % i], token, "again-x%d" % i)
            return code_name(r.code) == "OK"
        # Until the pool has noticed and reconnected, confirms fail (not sent,
        # or in doubt); then they go through on the new session.
        wait_for(one_confirm, timeout=15, interval=0.1, what="a confirm on a new session")
        confirms(c, "again2", 2)
    assert executions(pgdb, since)[-3:] == ["hf_1"] * 3


def test_traced_confirms_and_the_setting_off_run_unprepared(pgdb, make_daemon):
    d = confirm_daemon(make_daemon, pgdb)
    since = len(pgdb.cluster.log_text())
    with Client(d.socket) as c:
        # A traced statement carries its request's traceparent in a comment:
        # a text per request, so it is never prepared.
        # (a trace id of its own: other tests look for theirs in the shared log)
        trace = os.urandom(16).hex()
        confirms(c, "traced", 2, traceparent="00-%s-00f067aa0ba902b7-01" % trace)
    assert executions(pgdb, since) == ["<unnamed>"] * 2
    assert "traceparent='00-%s" % trace in pgdb.cluster.log_text()[since:]

    off = confirm_daemon(make_daemon, pgdb, "prepared_statements = false")
    since = len(pgdb.cluster.log_text())
    with Client(off.socket) as c:
        confirms(c, "off", 3)
    assert executions(pgdb, since) == ["<unnamed>"] * 3
    assert len(pgdb.claims("seat", "off")) == 3
