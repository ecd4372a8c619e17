"""Per-namespace admit hooks written in the configuration's Lua."""
import os

import harness
from harness import Client, code_name, parse_metrics

# Under valgrind (HOLDFASTD_WRAPPER) the daemon runs tens of times slower:
# an endless loop runs out of its 10 ms before its 200,000 instructions, and
# latencies say nothing about the daemon.
WRAPPED = bool(os.environ.get("HOLDFASTD_WRAPPER", "").strip())


def budget_ran_out(log):
    return "instruction budget exceeded" in log or (WRAPPED and "time budget exceeded" in log)

HOOKED = """
    seat = { default_ttl_ms = 30000, min_ttl_ms = 100, max_ttl_ms = 120000,
      admit = function(hold)
        if #hold.ids > 3 then return false, "at most 3 seats per hold" end
        if hold.partition:match("^vip%-") then return 999999 end  -- clamped to max
        if hold.partition == "boom" then error("hook bug") end
        if hold.partition == "spin" then while true do end end
        if hold.partition == "odd" then return "yes" end
        return true
      end },
"""


class Paced(Client):
    """Under valgrind a first call through new code takes tens of ms, and the
    hooks' share of the loop (10 ms at a stretch, earned back by time outside
    hooks) would refuse the next: leave the loop some time between Holds."""

    def __init__(self, path, pause=0.05):
        Client.__init__(self, path)
        self.pause = pause

    def hold(self, *args, **kw):
        if WRAPPED:
            import time
            time.sleep(self.pause)
        return Client.hold(self, *args, **kw)


def test_admit_hook_denies_sets_ttl_and_fails_closed(make_daemon):
    d = make_daemon(namespaces=HOOKED)
    with Paced(d.socket) as c:
        r = c.hold("seat", "run-1", ["1", "2", "3", "4"])
        assert code_name(r.code) == "PERMISSION_DENIED" and "at most 3 seats" in r.message
        r = c.hold("seat", "run-1", ["1", "2"], ttl_ms=5000)
        assert code_name(r.code) == "OK" and r.hold.ttl_ms == 5000
        r = c.hold("seat", "vip-1", ["1"])
        assert code_name(r.code) == "OK" and r.hold.ttl_ms == 120000
        for partition in ("boom", "spin", "odd"):
            r = c.hold("seat", partition, ["1"])
            assert code_name(r.code) == "INTERNAL", (partition, r)
        # A hook that failed leaves the daemon and the sandbox usable.
        assert code_name(c.hold("seat", "run-2", ["1"]).code) == "OK"
        m = harness.parse_metrics(c.metrics())
        assert m["holdfast_policy_hook_failures_total"] == 3
    log = d.log_text()
    assert "hook bug" in log and budget_ran_out(log)


def test_hook_sees_the_peer(make_daemon):
    import os
    ns = """seat = { admit = function(h) return h.uid == %d and h.namespace == "seat" end },""" % os.getuid()
    d = make_daemon(namespaces=ns)
    with Paced(d.socket) as c:
        assert code_name(c.hold("seat", "p", ["1"]).code) == "OK"


def test_hooks_survive_reload(make_daemon):
    import signal
    d = make_daemon(namespaces=HOOKED)
    with open(d.config) as f:
        text = f.read()
    with open(d.config, "w") as f:
        f.write(text.replace("at most 3 seats per hold", "three is the limit"))
    d.signal(signal.SIGHUP)
    harness.wait_for(lambda: "configuration reloaded" in d.log_text(), what="reload")
    with Paced(d.socket) as c:
        r = c.hold("seat", "run-1", ["1", "2", "3", "4"])
        assert "three is the limit" in r.message


# ---- a hook cannot crash or stall the daemon (issue 10, item 5) ----

def _big_ids(n, tag):
    """64 distinct ids of 120 bytes: a fact of about 10 KiB, so that a hook
    keeping its arguments reaches the sandbox's memory cap within ~400 Holds."""
    return ["%s-%03d-%s" % (tag, i, "x" * 110) for i in range(n)]


KEEPER = """
    seat = { admit = function(hold)
               kept = kept or {}
               kept[#kept + 1] = hold
               return true
             end },
    plain = {},
"""


def test_hook_that_keeps_its_arguments_hits_the_cap_and_the_daemon_serves_on(make_daemon):
    d = make_daemon(namespaces=KEEPER)
    with Paced(d.socket, pause=0.005) as c:
        passed = 0
        for i in range(3000):
            r = c.hold("seat", "p%d" % i, _big_ids(64, "h%d" % i), ttl_ms=1000)
            if code_name(r.code) == "INTERNAL":
                break
            passed += 1
        else:
            raise AssertionError("3000 Holds and the hook never ran out of memory")
        # ~4 MiB over what loading left, at ~10 KiB a fact (under valgrind
        # a call may run out of time first, collecting garbage near the cap)
        assert 100 < passed < 1000 if WRAPPED else 300 < passed < 1000, passed
        # From now on the hook fails every time, with the documented code...
        for i in range(50):
            r = c.hold("seat", "q%d" % i, _big_ids(64, "q%d" % i), ttl_ms=1000)
            assert code_name(r.code) == "INTERNAL", r
            assert r.message == "the namespace's admit hook failed"
        # ...and everything else works: Health, namespaces without hooks.
        assert c.health().health.ready
        assert code_name(c.hold("plain", "p", ["1"]).code) == "OK"
        m = harness.parse_metrics(c.metrics())
        assert m["holdfast_policy_hook_failures_total"] == 51
    if WRAPPED:
        harness.wait_for(lambda: "ran out of memory" in d.log_text() or
                         "ran out of time" in d.log_text(), what="a hook failure in the log")
    else:
        d.wait_log("ran out of memory")
        assert "not enough memory" in d.log_text()
    assert d.proc.poll() is None
    # A reload builds a new sandbox: the hook works again.
    import signal
    d.signal(signal.SIGHUP)
    harness.wait_for(lambda: "configuration reloaded" in d.log_text(), what="reload")
    with Client(d.socket) as c:
        assert code_name(c.hold("seat", "again", ["1"]).code) == "OK"


SLOW_FIND = """
    seat = { admit = function(hold)
               if hold.partition == "slow" then
                 return string.rep("a", 40000):find(".-b")
               end
               return true
             end },
"""


def _health_latencies(path, stop, out):
    """Health round trips on a connection of their own, until `stop`."""
    import time
    with Client(path) as c:
        while not stop.is_set():
            t0 = time.perf_counter()
            r = c.health()
            out.append(time.perf_counter() - t0)
            assert r.health.ready
            time.sleep(0.002)


def _slow_hook_flood(path, seconds, results):
    """In a process of its own (so that its work never delays the Health
    thread's): slow-hook Holds one at a time, then pipelined 50 at once;
    puts {code: count} on `results`."""
    import time
    codes = {}

    def count(r):
        codes[code_name(r.code)] = codes.get(code_name(r.code), 0) + 1

    t0 = time.monotonic()
    with Client(path) as c:
        while time.monotonic() - t0 < seconds / 2:
            count(c.hold("seat", "slow", ["1"]))
        while time.monotonic() - t0 < seconds:
            ids = [c.send(hold=harness.pb().HoldRequest(namespace="seat", partition="slow",
                                                        ids=["1"])) for _ in range(50)]
            for rid in ids:
                r = c.recv()
                assert r.id == rid
                count(r)
    results.put(codes)


def _measure_health_during_flood(d, seconds=3.0):
    """Health latencies (sorted) and the flood's {code: count}."""
    import multiprocessing
    import threading
    import time
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    flood = ctx.Process(target=_slow_hook_flood, args=(d.socket, seconds, results))
    stop, lat = threading.Event(), []
    health = threading.Thread(target=_health_latencies, args=(d.socket, stop, lat))
    health.start()
    try:
        time.sleep(0.2)
        flood.start()
        codes = results.get(timeout=30 + 10 * seconds)
        flood.join(10)
        time.sleep(0.2)
    finally:
        stop.set()
        health.join()
    assert flood.exitcode == 0
    return sorted(lat), codes


def test_slow_pattern_is_cut_short_and_health_stays_fast(make_daemon):
    """The issue's hook, string.rep("a",40000):find(".-b"), blocked the loop
    (and Health on another connection) for 5.4 s. Now each call ends after
    the 10 ms budget and all hooks together hold the loop at most 10 ms at a
    stretch, so Health answers within 50 ms throughout a 3 s flood of them
    (one at a time, then pipelined 50 at once; before, one pipelined batch
    alone held the loop for 50 x 5.4 s).

    On a busy shared machine a preempted daemon shows outliers over 50 ms
    with no hook at all, so the bound must hold over one whole run (about
    1000 samples) out of three. A stall that hooks cause recurs in every
    pipelined batch, so it could not pass that way."""
    import time
    d = make_daemon(namespaces=SLOW_FIND)
    harness.pb()
    runs = []
    for _ in range(3):
        lat, codes = _measure_health_during_flood(d)
        assert list(codes) == ["INTERNAL"], codes
        runs.append((lat, codes["INTERNAL"]))
        print("\nHealth during %d slow-hook Holds (3 s): %d samples, median %.2f ms, "
              "p99 %.2f ms, max %.2f ms" % (codes["INTERNAL"], len(lat), 1000 * lat[len(lat) // 2],
                                            1000 * lat[int(len(lat) * 0.99)], 1000 * lat[-1]))
        assert codes["INTERNAL"] > 500 and len(lat) >= 100
        if WRAPPED:
            break
        assert len(lat) >= 500
        if lat[-1] < 0.050:
            break
        time.sleep(0.5)
    else:
        raise AssertionError("Health took over 50 ms in every run: max %s ms" %
                             ", ".join("%.1f" % (1000 * lat[-1]) for lat, _ in runs))
    log = d.wait_log("time budget exceeded")
    assert "ran out of time" in log
    # The hooks' share refills: a normal call works right after.
    time.sleep(0.1)
    with Client(d.socket) as c:
        assert code_name(c.hold("seat", "fine", ["1"]).code) == "OK"


ESCAPES = """
    seat = { admit = function(hold)
               local p = hold.partition
               if p == "spin" then while true do end end
               if p == "pcall" then
                 while true do pcall(function() while true do end end) end
               end
               if p == "gc" then setmetatable({}, {__gc = function() while true do end end}) end
               if p == "move" then table.move({}, 1, 1 << 50, 1, {}) end
               return true
             end },
"""


def test_endless_loops_end_by_budget(make_daemon):
    import time
    d = make_daemon(namespaces=ESCAPES)
    with Client(d.socket) as c:
        for partition in ("spin", "pcall", "gc", "move"):
            time.sleep(0.06)  # a full share of the loop for each
            t0 = time.monotonic()
            r = c.hold("seat", partition, ["1"])
            took = time.monotonic() - t0
            assert code_name(r.code) == "INTERNAL", (partition, r)
            assert took < (2.0 if WRAPPED else 0.2), (partition, took)
        time.sleep(0.06)
        assert code_name(c.hold("seat", "ok", ["1"]).code) == "OK"
        assert c.health().health.ready
        failures = parse_metrics(c.metrics())["holdfast_policy_hook_failures_total"]
        assert failures >= 4, failures
    log = d.log_text()
    assert budget_ran_out(log)
    # One line per failure kind per 10 s: the gc refusal is logged, the move
    # refusal after it (the same kind) only counted.
    assert "no __gc metamethods" in log
