"""The system under test for the chaos run, and the faults injected into it.

One private PostgreSQL cluster (not the integration tests' shared one: it is
restarted and frozen here), one redis-server and one holdfastd, all started
here and all stopped by close(), which is safe to call at any point, twice,
and with processes frozen (it thaws them first).

Faults (start, then heal):
  redis_pause      SIGSTOP redis-server ... SIGCONT
  redis_kill       SIGKILL redis-server ... start it again, empty
  pg_pause         SIGSTOP the postmaster and all its children ... SIGCONT
  pg_fast          pg_ctl stop -m fast ... start
  pg_immediate     pg_ctl stop -m immediate (crash) ... start (recovery)
  daemon_kill      SIGKILL holdfastd ... start it again
  daemon_term      SIGTERM holdfastd (drain shorter than the requests'
                   deadlines), wait for its exit (must be 0) ... start it again
  daemon_vanish    SIGKILL holdfastd as if its host vanished: its PostgreSQL
                   connections (through a PgProxy) linger, so the server
                   processes run their statements on (and commit, if they
                   get that far) ... start it again
and, from a thread of their own, row locks (RowLocker): a session holding an
uncommitted claim row or a fence row lock on a seat for a few hundred ms.
"""
import os
import random
import signal
import subprocess
import threading
import time

import harness
import pgharness as pgh
from pgharness import lit

NAMESPACES = """
    seat = { default_ttl_ms = 2000, min_ttl_ms = 10, max_ttl_ms = 60000,
             confirmable = true, confirm_window_ms = 1500, confirmed_marker_ttl_ms = 2000 },
"""
DRAIN_MS = 200

FAULTS = {
    # name: (weight, the group it excludes: one fault per group at a time)
    "redis_pause": (2.0, "redis"),
    "redis_kill": (2.0, "redis"),
    "pg_pause": (2.0, "pg"),
    "pg_fast": (1.0, "pg"),
    "pg_immediate": (1.0, "pg"),
    "daemon_kill": (2.0, "daemon"),
    "daemon_term": (1.5, "daemon"),
    "daemon_vanish": (1.5, "daemon"),
}


def _guarded(fn):
    """A fault's step: one at a time, and nothing more once close() began
    (a nemesis still running must not start a process after the clean-up)."""
    def step(self, *args):
        with self.lock:
            if self.closed:
                return None
            return fn(self, *args)
    step.__name__ = fn.__name__
    return step


class System:
    def __init__(self, workdir, t0):
        self.workdir = workdir
        self.t0 = t0
        self.events = []     # (t, text): what the nemesis did
        self.problems = []   # what must fail the test besides the checker
        self.cluster = None
        self.proxy = None
        self.lingering = []  # (since, relays) left open by daemon_vanish
        self.redis = None
        self.daemon = None
        self.pg_frozen = []
        self.redis_frozen = False
        self.closed = False
        self.lock = threading.RLock()

    def now(self):
        return time.monotonic() - self.t0

    def event(self, text):
        self.events.append((self.now(), text))

    def problem(self, text):
        self.event("PROBLEM: " + text)
        self.problems.append(text)

    # ---- start ----

    def start(self):
        c = self.cluster = pgh.PgCluster()
        c.start()
        c.admin("CREATE DATABASE chaos")
        r = c.psql_file("chaos", pgh.ROLES_SQL)
        assert r.returncode == 0, "roles-example.sql failed:\n" + r.stderr
        r = c.migrate("chaos")
        assert r.returncode == 0, "holdfastd --migrate failed:\n" + r.stdout + r.stderr
        self.db = pgh.PgDatabase(c, "chaos")
        self.proxy = pgh.PgProxy(c)
        self.redis = harness.RedisServer(self.workdir).start()
        self.daemon = harness.Daemon(
            self.workdir, self.redis.address, namespaces=NAMESPACES,
            top_extra=self.db.config(pool_size=4, statement_timeout_ms=2000, proxy=self.proxy),
            limits="drain_timeout_ms = %d," % DRAIN_MS)
        self.daemon.start()
        return self

    # ---- holdfastd ----

    def daemon_alive(self):
        return self.daemon.proc is not None and self.daemon.proc.poll() is None

    def _reap_daemon(self, timeout):
        d = self.daemon
        try:
            rc = d.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.problem("holdfastd did not exit within %.0f s of SIGTERM" % timeout)
            d.proc.kill()
            rc = d.proc.wait()
        d.log.close()
        d.proc = None
        return rc

    @_guarded
    def check_daemon(self):
        """A daemon that exited without being told to is a problem; it is
        started again."""
        d = self.daemon
        if d.proc is not None and d.proc.poll() is not None:
            rc = self._reap_daemon(1)
            self.problem("holdfastd exited by itself with status %s" % rc)
            self.start_daemon()

    @_guarded
    def stop_daemon(self, sig, vanish=False):
        self.check_daemon()
        d = self.daemon
        if d.proc is None:
            return
        if vanish:
            self.lingering.append((time.monotonic(), self.proxy.linger()))
        d.proc.send_signal(sig)
        rc = self._reap_daemon(10 + DRAIN_MS / 1000)
        if sig == signal.SIGTERM and rc != 0:
            self.problem("holdfastd exited %s after SIGTERM" % rc)

    @_guarded
    def start_daemon(self):
        if self.daemon.proc is None:
            try:
                self.daemon.start(wait_ready=False)
            except AssertionError as e:
                self.problem("holdfastd did not start: %s" % str(e)[-2000:])
                self.daemon.log.close()
                self.daemon.proc = None

    @_guarded
    def end_lingering(self, older_than=3.0):
        """Close the connections a vanished daemon left, once their
        statements had time to finish (lock_timeout < 2 s): idle server
        processes would otherwise pile up to max_connections."""
        now = time.monotonic()
        for since, relays in [x for x in self.lingering if now - x[0] >= older_than]:
            for r in relays:
                r.close()
            self.lingering.remove((since, relays))

    # ---- redis ----

    @_guarded
    def pause_redis(self):
        self.redis.pause()
        self.redis_frozen = True

    @_guarded
    def resume_redis(self):
        if self.redis.proc and self.redis_frozen:
            self.redis.resume()
        self.redis_frozen = False

    @_guarded
    def kill_redis(self):
        self.redis.proc.kill()
        self.redis.proc.wait()
        self.redis.proc = None

    @_guarded
    def start_redis(self):
        if self.redis.proc is None:
            self.redis.start()

    # ---- postgres ----

    def _pg_pids(self):
        try:
            with open(os.path.join(self.cluster.data, "postmaster.pid")) as f:
                pm = int(f.readline())
        except (OSError, ValueError):
            return None, []
        kids = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % d) as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pm:
                kids.append(int(d))
        return pm, kids

    @_guarded
    def pause_pg(self):
        pm, _ = self._pg_pids()
        if pm is None:
            return
        os.kill(pm, signal.SIGSTOP)  # first: it forks no new child while stopped
        self.pg_frozen = [pm]
        _, kids = self._pg_pids()
        for pid in kids:
            try:
                os.kill(pid, signal.SIGSTOP)
                self.pg_frozen.append(pid)
            except ProcessLookupError:
                pass

    @_guarded
    def resume_pg(self):
        for pid in reversed(self.pg_frozen):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.pg_frozen = []

    @_guarded
    def stop_pg(self, mode):
        self.cluster.stop(mode)

    @_guarded
    def start_pg(self):
        pm, _ = self._pg_pids()
        if pm is None or not os.path.exists("/proc/%d" % pm):
            self.cluster.start()

    # ---- faults ----

    def fault(self, name):
        """(start, heal) of a fault."""
        return {
            "redis_pause": (self.pause_redis, self.resume_redis),
            "redis_kill": (self.kill_redis, self.start_redis),
            "pg_pause": (self.pause_pg, self.resume_pg),
            "pg_fast": (lambda: self.stop_pg("fast"), self.start_pg),
            "pg_immediate": (lambda: self.stop_pg("immediate"), self.start_pg),
            "daemon_kill": (lambda: self.stop_daemon(signal.SIGKILL), self.start_daemon),
            "daemon_term": (lambda: self.stop_daemon(signal.SIGTERM), self.start_daemon),
            "daemon_vanish": (lambda: self.stop_daemon(signal.SIGKILL, True), self.start_daemon),
        }[name]

    @_guarded
    def heal_all(self):
        """Everything thawed and running (idempotent)."""
        self.resume_pg()
        self.resume_redis()
        self.start_pg()
        self.start_redis()
        self.check_daemon()
        self.start_daemon()

    def close(self):
        """Stop every process this run started, whatever state it is in."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
        for pid in self.pg_frozen:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        if self.redis and self.redis.proc:
            try:
                self.redis.resume()
            except Exception:
                pass
        if self.daemon and self.daemon.proc is not None:
            try:
                self.daemon.proc.kill()
                self.daemon.proc.wait(10)
                self.daemon.log.close()
            except Exception:
                pass
            self.daemon.proc = None
        if self.proxy:
            self.proxy.close()
        if self.redis:
            try:
                self.redis.stop()
            except Exception:
                if self.redis.proc:
                    self.redis.proc.kill()
        if self.cluster:
            try:
                self.db.close_admin()
            except Exception:
                pass
            self.cluster.destroy()


class Nemesis(threading.Thread):
    """Rounds of one or two faults at once (from different groups), each
    held for a random time, then healed, then a calm spell."""

    def __init__(self, system, rnd, stop_at):
        super().__init__(name="nemesis", daemon=True)
        self.sys = system
        self.rnd = rnd
        self.stop_at = stop_at
        self.rounds = 0
        self.counts = {}
        self.error = None

    def run(self):
        try:
            self._run()
        except Exception as e:  # reported by the test
            import traceback
            self.error = traceback.format_exc()
            self.sys.problem("nemesis crashed: %r" % e)
        finally:
            try:
                self.sys.heal_all()
            except Exception as e:
                self.sys.problem("healing failed: %r" % e)

    def _pick(self):
        names = list(FAULTS)
        chosen, groups = [], set()
        for _ in range(2 if self.rnd.random() < 0.35 else 1):
            left = [n for n in names if FAULTS[n][1] not in groups]
            name = self.rnd.choices(left, [FAULTS[n][0] for n in left])[0]
            chosen.append(name)
            groups.add(FAULTS[name][1])
        return chosen

    def _run(self):
        rnd = self.rnd
        time.sleep(rnd.uniform(0.5, 1.0))
        while time.monotonic() < self.stop_at:
            self.sys.check_daemon()
            self.sys.end_lingering()
            chosen = self._pick()
            self.sys.event("start " + " + ".join(chosen))
            healers = []
            for name in chosen:
                start, heal = self.sys.fault(name)
                start()
                healers.append((name, heal))
                self.counts[name] = self.counts.get(name, 0) + 1
            time.sleep(rnd.uniform(0.1, 1.2))
            rnd.shuffle(healers)
            for name, heal in healers:
                heal()
                self.sys.event("healed " + name)
            self.rounds += 1
            time.sleep(rnd.uniform(0.2, 1.0))


class RowLocker(threading.Thread):
    """A session that, again and again, holds a lock a confirm needs for
    100-800 ms: an uncommitted claim row (like block_claim), or the fence
    rows of a partition (FOR UPDATE). Always rolled back."""

    def __init__(self, system, rnd, stop_at, partitions, seats, ns="seat"):
        super().__init__(name="row-locker", daemon=True)
        self.sys = system
        self.rnd = rnd
        self.stop_at = stop_at
        self.partitions = partitions
        self.seats = seats
        self.ns = ns
        self.session = None
        self.locks = 0
        self.failures = 0

    def _session(self):
        if self.session is None:
            s = self.sys.db.session()
            s.sock.settimeout(5)
            s.query("SET lock_timeout = '300ms'; SET statement_timeout = '2s';"
                    " SET application_name = 'hf-chaos-locker'")
            self.session = s
        return self.session

    def _drop(self):
        if self.session is not None:
            try:
                self.session.sock.close()
            except OSError:
                pass
            self.session = None

    def run(self):
        rnd = self.rnd
        while time.monotonic() < self.stop_at:
            time.sleep(rnd.uniform(0.05, 0.4))
            p = rnd.choice(self.partitions)
            seat = rnd.choice(self.seats)
            try:
                s = self._session()
                s.query("BEGIN")
                if rnd.random() < 0.5:
                    s.query("INSERT INTO holdfast.claims VALUES (%s, %s, %s, 1, 'nemesis', '',"
                            " 'nemesis', now()) ON CONFLICT DO NOTHING"
                            % (lit(self.ns), lit(p), lit(seat)))
                else:
                    s.query("SELECT 1 FROM holdfast.fences WHERE ns = %s AND partition = %s"
                            " ORDER BY resource COLLATE \"C\" FOR UPDATE" % (lit(self.ns), lit(p)))
                self.locks += 1
                time.sleep(rnd.uniform(0.1, 0.8))
                s.query("ROLLBACK")
            except Exception:
                self.failures += 1
                self._drop()
                time.sleep(0.1)
        self._drop()
