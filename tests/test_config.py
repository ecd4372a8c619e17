"""Configuration: a sandboxed Lua file; errors name file, line and key;
--check-config; SIGHUP reload keeps the old config when the new one is bad."""
import os
import signal
import subprocess

import harness
from harness import Client, HOLDFASTD, code_name


def check(tmp, text):
    path = os.path.join(tmp, "c.lua")
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run([HOLDFASTD, "--check-config", path], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr, path


GOOD = """return {
  redis = { address = "unix:/tmp/r.sock" },
  namespaces = {
    seat = { default_ttl_ms = 1000 },
  },
}
"""


def test_valid_config_passes(workdir):
    rc, out, path = check(workdir, GOOD)
    assert rc == 0 and "ok" in out


def test_syntax_error_names_file_and_line(workdir):
    rc, out, path = check(workdir, "return {\n  redis = { address = 'x:1' \n  namespaces = {}\n}\n")
    assert rc == 1
    assert path + ":3:" in out, out


def test_wrong_type_names_line_and_key(workdir):
    text = GOOD.replace("default_ttl_ms = 1000", "default_ttl_ms = 'soon'")
    rc, out, path = check(workdir, text)
    assert rc == 1
    assert "%s:4: key 'namespaces.seat.default_ttl_ms'" % path in out, out


def test_out_of_range_and_unknown_keys(workdir):
    rc, out, path = check(workdir, GOOD.replace("address", "adress"))
    assert rc == 1 and "%s:2: key 'redis.adress': unknown key" % path in out, out
    rc, out, _ = check(workdir, GOOD.replace("default_ttl_ms = 1000", "default_ttl_ms = 5"))
    assert rc == 1 and "between 10 and" in out, out
    rc, out, _ = check(workdir, GOOD.replace("default_ttl_ms = 1000",
                                             "min_ttl_ms = 500, max_ttl_ms = 100"))
    assert rc == 1 and "min_ttl_ms" in out, out
    rc, out, _ = check(workdir, GOOD.replace("seat = {", "['bad name'] = {"))
    assert rc == 1 and "namespaces.bad name" in out, out
    rc, out, _ = check(workdir, "return {}")
    assert rc == 1 and "namespaces" in out, out
    rc, out, _ = check(workdir, "return 42")
    assert rc == 1 and "must return a table" in out, out
    rc, out, _ = check(workdir, GOOD.replace("seat = { default_ttl_ms = 1000 }",
                                             "seat = { on_redis_down = 'maybe' }"))
    assert rc == 1 and "fail_closed, best_effort" in out, out
    rc, out, _ = check(workdir, GOOD.replace("default_ttl_ms = 1000", "admit = 'yes'"))
    assert rc == 1 and "namespaces.seat.admit': must be a function" in out, out


def test_sandbox_has_no_io_os_or_require(workdir):
    for expr in ("io.open('/etc/passwd')", "os.getenv('HOME')", "require('os')",
                 "dofile('/etc/passwd')", "load('return 1')()"):
        rc, out, path = check(workdir, "local x = %s\n%s" % (expr, GOOD))
        assert rc == 1, (expr, out)
        assert path + ":1:" in out, (expr, out)


def test_endless_loop_is_stopped(workdir):
    rc, out, _ = check(workdir, "while true do end\n" + GOOD)
    assert rc == 1 and "instruction budget" in out, out


def test_lua_logic_is_allowed(workdir):
    text = """local ns = {}
for _, name in ipairs({"seat", "stock"}) do
  ns[name] = { default_ttl_ms = 60 * 1000 }
end
return { namespaces = ns }
"""
    rc, out, _ = check(workdir, text)
    assert rc == 0, out


def test_holdfastd_refuses_to_start_on_a_broken_file(workdir):
    path = os.path.join(workdir, "broken.lua")
    with open(path, "w") as f:
        f.write("return {\n  namespaces = 3,\n}\n")
    r = subprocess.run([HOLDFASTD, "--config", path], capture_output=True, text=True, timeout=10)
    assert r.returncode == 1 and path + ":2: key 'namespaces'" in r.stderr


def test_sighup_reload_applies_a_good_file_and_keeps_the_old_on_a_bad_one(make_daemon):
    d = make_daemon()
    with Client(d.socket) as c:
        assert code_name(c.hold("stock", "sku-1", ["1"]).code) == "NOT_FOUND"
        # A broken file: refused, the running config stays.
        with open(d.config) as f:
            good = f.read()
        with open(d.config, "w") as f:
            f.write(good.replace("namespaces = {", "namespaces = { stock = { min_ttl_ms = 'x' },"))
        d.signal(signal.SIGHUP)
        harness.wait_for(lambda: "reload refused" in d.log_text(), what="the reload to be refused")
        assert code_name(c.hold("seat", "r", ["1"], ttl_ms=1000).code) == "OK"
        assert code_name(c.hold("stock", "sku-1", ["1"]).code) == "NOT_FOUND"
        assert ":1: key 'namespaces.stock.min_ttl_ms'" in d.log_text() or \
            "key 'namespaces.stock.min_ttl_ms'" in d.log_text()
        # A good file: the new namespace appears without a restart.
        with open(d.config, "w") as f:
            f.write(good.replace("namespaces = {", "namespaces = { stock = { default_ttl_ms = 2000 },"))
        d.signal(signal.SIGHUP)
        harness.wait_for(lambda: "configuration reloaded" in d.log_text(), what="the reload")
        r = c.hold("stock", "sku-1", ["1"])
        assert code_name(r.code) == "OK" and r.hold.ttl_ms == 2000
        m = harness.parse_metrics(c.metrics())
        assert m["holdfast_config_reloads_total"] == 1
        assert m["holdfast_config_reload_failures_total"] == 1
