"""Fault injection: many clients hold, confirm and cancel a few seats while a
nemesis pauses and kills Redis, pauses and restarts PostgreSQL (fast and
immediate), holds row locks, and kills (SIGKILL) or terminates (SIGTERM,
short drain) holdfastd, or makes it vanish (SIGKILL, its PostgreSQL
connections left open so its statements run on: issue 9's caller gone).
Every request is recorded; at the end the history and the final tables go
through checker.check() (tests/chaos/system.py has the faults).

Bounded in time: HOLDFAST_CHAOS_SECONDS (default 40) of faults and load,
plus about 15 s of set-up, settling and checking.

Environment:
  HOLDFAST_CHAOS_SECONDS    length of the faulty phase (default 40)
  HOLDFAST_CHAOS_CLIENTS    client threads (default 12)
  HOLDFAST_CHAOS_SEED       seed of the clients' and the nemesis' choices
                            (thread timing is not reproducible anyway)
  HOLDFAST_CHAOS_ARTIFACTS  directory for the history, the tables and the
                            logs (default: a new hf-chaos-report-* temp dir,
                            kept only when the test fails)
"""
import atexit
import json
import os
import random
import re
import shutil
import signal
import tempfile
import time

import pytest

import checker
from harness import wait_for
from system import Nemesis, RowLocker, System
from workload import NS, Purchase, Worker

SECONDS = float(os.environ.get("HOLDFAST_CHAOS_SECONDS", "40"))
CLIENTS = int(os.environ.get("HOLDFAST_CHAOS_CLIENTS", "12"))
SEED = int(os.environ.get("HOLDFAST_CHAOS_SEED") or random.randrange(1 << 30))
PARTITIONS = ["p0", "p1", "p2"]
SEATS = ["s0", "s1", "s2", "s3"]
CALM_S = 3.0           # the last seconds of load run without faults
PROBE_UNDECIDED = 400  # requests with no definite answer, asked again at the end
PROBE_DECIDED = 100    # and a sample of the others


def _interrupted(signum, frame):
    raise KeyboardInterrupt("signal %d" % signum)


@pytest.fixture
def system():
    """The processes of the run, stopped whatever happens: at the end of the
    test, when it fails, when pytest is interrupted (SIGINT, or SIGTERM, made
    an interrupt here), and at exit should the teardown not run."""
    workdir = tempfile.mkdtemp(prefix="hf-chaos-")
    s = System(workdir, time.monotonic())
    atexit.register(s.close)
    previous = signal.signal(signal.SIGTERM, _interrupted)
    try:
        s.start()
        yield s
    finally:
        s.close()
        shutil.rmtree(workdir, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)


def quiesce(db, timeout=20):
    """No statement of any holdfastd (this one, or one killed before) runs."""
    db.close_admin()
    wait_for(lambda: db.value(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        " AND application_name = 'holdfastd' AND state <> 'idle'") == "0",
        timeout=timeout, interval=0.1, what="the daemon's statements to end")


def probe(worker, history, rnd):
    """Ask again, once, about requests that never got a definite answer (and
    a sample of those that did): the answers join the history."""
    last, decided = {}, set()
    for op in history:
        if op.op == "confirm":
            k = (op.key, op.request())
            last[k] = op
            if op.code in checker.DEFINITE:
                decided.add(k)
    undecided = [k for k in last if k not in decided][:PROBE_UNDECIDED]
    done = [k for k in last if k in decided]
    sample = undecided + rnd.sample(done, min(PROBE_DECIDED, len(done)))
    for k in sample:
        op = last[k]
        p = Purchase(op.key, op.partition, op.ids, op.reference, op.payload)
        p.token, p.fence = op.token, op.fence
        worker.confirm(p, timeout_ms=3000)
    return len(undecided), len(sample) - len(undecided)


def recovers(worker, timeout=30):
    """After the faults, a new hold and confirm go through."""
    p = Purchase("recovery", "after", ["r1"], "recovery", b"")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        token, fence = worker.hold("after", ["r1"])
        if token:
            p.token, p.fence = token, fence
            if worker.confirm(p, timeout_ms=3000) == "OK":
                return True
        time.sleep(0.2)
    return False


def snapshot(db):
    db.close_admin()
    q = db.query
    claims = [dict(ns=r[0], partition=r[1], resource=r[2], fence=int(r[3]), key=r[4])
              for r in q("SELECT ns, partition, resource, fence, idempotency_key"
                         " FROM holdfast.claims")]
    cancelled = [dict(id=int(r[0]), ns=r[1], partition=r[2], resource=r[3], fence=int(r[4]),
                      key=r[5], cancel_key=r[6])
                 for r in q("SELECT id, ns, partition, resource, fence, idempotency_key,"
                            " cancel_idempotency_key FROM holdfast.cancelled_claims ORDER BY id")]
    fences = [dict(ns=r[0], partition=r[1], resource=r[2], fence=int(r[3]))
              for r in q("SELECT ns, partition, resource, fence FROM holdfast.fences")]
    idem = []
    for r in q("SELECT ns, key, op, code, result::text FROM holdfast.idempotency"):
        rows = json.loads(r[4]).get("rows", [])
        idem.append(dict(ns=r[0], key=r[1], op=r[2], code=r[3],
                         rows=[dict(resource=x.get("resource"), fence=x.get("fence"))
                               for x in rows]))
    return dict(claims=claims, cancelled=cancelled, fences=fences, idempotency=idem)


def tokens_in(text, tokens):
    """Issued tokens (or their random halves) that appear in a log."""
    randoms = {t.split(".", 1)[1] for t in tokens}
    found = set()
    for m in re.finditer(r"[A-Za-z0-9_-]{22,}", text):
        s = m.group(0)
        for i in range(len(s) - 21):
            if s[i:i + 22] in randoms:
                found.add(s[i:i + 22])
    return found


def save_artifacts(system, history, snap, violations, problems, summary):
    out = os.environ.get("HOLDFAST_CHAOS_ARTIFACTS") or tempfile.mkdtemp(
        prefix="hf-chaos-report-")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(summary + "\n")
    with open(os.path.join(out, "violations.txt"), "w") as f:
        f.write("\n\n".join(v.report() for v in violations) + "\n")
        f.write("\n".join("PROBLEM: " + p for p in problems) + "\n")
    with open(os.path.join(out, "history.txt"), "w") as f:
        for op in sorted(history, key=lambda o: o.start):
            f.write(op.brief() + "\n")
    with open(os.path.join(out, "events.txt"), "w") as f:
        for t, e in system.events:
            f.write("t=%.3f %s\n" % (t, e))
    if snap is not None:
        with open(os.path.join(out, "tables.json"), "w") as f:
            json.dump(snap, f, indent=1, sort_keys=True)
    for src in (system.daemon.log_path, os.path.join(system.redis.dir, "redis.log"),
                system.cluster.log_path):
        try:
            shutil.copy(src, out)
        except OSError:
            pass
    return out


def test_chaos(system):
    rnd = random.Random(SEED)
    history = []
    system.t0 = t0 = time.monotonic()
    stop_at = t0 + SECONDS
    workers = [Worker(i, system.daemon.socket, history, random.Random(rnd.random()), stop_at,
                      t0, PARTITIONS, SEATS) for i in range(CLIENTS)]
    nemesis = Nemesis(system, random.Random(rnd.random()), stop_at - CALM_S)
    locker = RowLocker(system, random.Random(rnd.random()), stop_at - CALM_S, PARTITIONS, SEATS)
    threads = workers + [nemesis, locker]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(1.0, stop_at + 60 - time.monotonic()))
    problems = list(system.problems)
    problems += ["%s still running after the run" % t.name for t in threads if t.is_alive()]
    problems += ["%s crashed:\n%s" % (w.name, w.error) for w in workers if w.error]
    if nemesis.error:
        problems.append("nemesis crashed:\n" + nemesis.error)
    for w in workers:
        problems += ["no proper answer: " + r.brief() + " " + r.message for r in w.late]

    # Settle: everything up, no statement running; then ask again about the
    # requests left without a definite answer, and check a new confirm works.
    snap, violations = None, []
    try:
        system.heal_all()
        system.daemon.wait_ready(timeout=30)
        quiesce(system.db)
        prober = Worker(CLIENTS, system.daemon.socket, history, random.Random(rnd.random()),
                        time.monotonic() + 120, t0, PARTITIONS, SEATS)
        undecided, decided = probe(prober, history, rnd)
        if not recovers(prober):
            problems.append("no confirm went through within 30 s after the faults ended")
        prober.drop()
        quiesce(system.db)
        snap = snapshot(system.db)
        violations = checker.check(history, snap)
    except Exception as e:
        problems.append("settling or checking failed: %r" % e)
        undecided = decided = 0

    counts = checker.summary(history)
    confirmed = counts[("confirm", "OK")]
    summary = "\n".join([
        "seed=%d seconds=%g clients=%d requests=%d" % (SEED, SECONDS, CLIENTS, len(history)),
        "nemesis rounds=%d %s; row locks=%d" % (nemesis.rounds, sorted(nemesis.counts.items()),
                                                locker.locks),
        "probed %d undecided and %d decided requests" % (undecided, decided),
        "answers: " + ", ".join("%s %s=%d" % (op, code, n)
                                for (op, code), n in sorted(counts.items(), key=str)),
    ])
    if snap is not None:
        summary += "\ntables: %d claims, %d cancelled, %d idempotency records" % (
            len(snap["claims"]), len(snap["cancelled"]), len(snap["idempotency"]))
    if confirmed < 5:
        problems.append("only %d confirms answered OK: the run proved little" % confirmed)
    if nemesis.rounds < 1:
        problems.append("the nemesis did nothing")

    # The daemon stops cleanly, and never logged a token.
    try:
        system.stop_daemon(signal.SIGTERM)
        problems += system.problems[len(problems):]
        text = open(system.daemon.log_path, "rb").read().decode("utf-8", "replace")
        tokens = set().union(*(w.tokens for w in workers), prober.tokens)
        leaked = tokens_in(text, tokens)
        if leaked:
            problems.append("%d tokens appear in the daemon log" % len(leaked))
    except Exception as e:
        problems.append("stopping the daemon failed: %r" % e)
    print(summary)

    if violations or problems:
        out = save_artifacts(system, history, snap, violations, problems, summary)
        report = [summary, "artifacts: " + out]
        report += [v.report() for v in violations[:15]]
        if len(violations) > 15:
            report.append("... %d violations in all" % len(violations))
        report += ["PROBLEM: " + p for p in problems[:15]]
        pytest.fail("\n\n".join(report), pytrace=False)
    elif os.environ.get("HOLDFAST_CHAOS_ARTIFACTS"):
        save_artifacts(system, history, snap, violations, problems, summary)
