"""Per-namespace admit hooks written in the configuration's Lua."""
import harness
from harness import Client, code_name

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


def test_admit_hook_denies_sets_ttl_and_fails_closed(make_daemon):
    d = make_daemon(namespaces=HOOKED)
    with Client(d.socket) as c:
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
    assert "hook bug" in log and "instruction budget exceeded" in log


def test_hook_sees_the_peer(make_daemon):
    import os
    ns = """seat = { admit = function(h) return h.uid == %d and h.namespace == "seat" end },""" % os.getuid()
    d = make_daemon(namespaces=ns)
    with Client(d.socket) as c:
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
    with Client(d.socket) as c:
        r = c.hold("seat", "run-1", ["1", "2", "3", "4"])
        assert "three is the limit" in r.message
