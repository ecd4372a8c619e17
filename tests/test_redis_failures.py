"""Redis losing its scripts, restarting, stopping, pausing and lagging
replicas: requests afterwards work, and a timeout is never a grant."""
import time

import harness
from harness import Client, code_name, pb


def hold_ok(c, partition, ident="1", ttl_ms=5000):
    r = c.hold("seat", partition, [ident], ttl_ms=ttl_ms)
    assert code_name(r.code) == "OK", r
    return r.hold.token


def test_function_flush_is_recovered(client, daemon, redis):
    hold_ok(client, "ff", "1")
    assert redis.cmd("FUNCTION", "FLUSH") == "OK"
    token = hold_ok(client, "ff", "2")  # answered through EVAL, library reloaded
    assert code_name(client.release("seat", "ff", ["2"], token).code) == "OK"
    names = [lib[1] for lib in redis.cmd("FUNCTION", "LIST")]
    assert names == ["holdfast_v1"]
    hold_ok(client, "ff", "3")
    m = harness.parse_metrics(client.metrics())
    assert m["holdfast_redis_noscript_recoveries_total"] >= 1
    assert m['holdfast_script_path_info{path="fcall"}'] == 1


def test_script_flush_is_recovered_on_the_evalsha_path(make_daemon, redis):
    d = make_daemon(redis_extra='script_path = "evalsha"')
    with Client(d.socket) as c:
        assert c.health().health.script_path == "evalsha"
        hold_ok(c, "sf", "1")
        assert redis.cmd("SCRIPT", "FLUSH") == "OK"
        token = hold_ok(c, "sf", "2")
        assert code_name(c.release("seat", "sf", ["2"], token).code) == "OK"
        hold_ok(c, "sf", "3")


def test_eval_path_works(make_daemon):
    d = make_daemon(redis_extra='script_path = "eval"')
    with Client(d.socket) as c:
        assert c.health().health.script_path == "eval"
        token = hold_ok(c, "ev", "1")
        assert code_name(c.status("seat", "ev", ["1"], token).code) == "OK"
        assert code_name(c.release("seat", "ev", ["1"], token).code) == "OK"


def test_function_load_refused_falls_back_to_evalsha(make_daemon, redis):
    # An ACL user that may not run FUNCTION: the daemon must fall back.
    redis.cmd("ACL", "SETUSER", "app", "on", ">secret", "~*", "+@all", "-function")
    d = make_daemon(redis_extra='username = "app", password = "secret"')
    with Client(d.socket) as c:
        assert c.health().health.script_path == "evalsha"
        hold_ok(c, "acl", "1")
    d.wait_log("falling back to EVALSHA")


def test_redis_restart_is_survived(client, daemon, redis):
    hold_ok(client, "rs", "1")
    redis.restart()
    daemon.wait_ready()
    hold_ok(client, "rs", "2")
    assert redis.cmd("FUNCTION", "LIST")[0][1] == "holdfast_v1"


def test_redis_down_fail_closed_then_back(client, daemon, redis):
    redis.stop()
    started = time.monotonic()
    r = client.hold("seat", "down", ["1"], timeout_ms=1500)
    assert code_name(r.code) == "UNAVAILABLE", r
    assert not r.degraded and not r.hold.token
    assert time.monotonic() - started < 1.5 + 2.0  # its deadline, plus slack for valgrind
    h = client.health().health
    assert not h.ready and h.redis == "down"
    assert daemon.ctl("health").returncode == 1
    redis.start()
    daemon.wait_ready()
    hold_ok(client, "down", "1")
    assert daemon.ctl("health").returncode == 0


def test_redis_down_best_effort_is_degraded_never_plain(client, daemon, redis):
    redis.stop()
    r = client.hold("product-modify", "10001", ["edit"], timeout_ms=1000)
    assert code_name(r.code) == "OK" and r.degraded, r
    assert not r.hold.token
    assert "degraded" in r.message
    # fail_closed namespaces stay closed at the same time.
    assert code_name(client.hold("seat", "x", ["1"]).code) == "UNAVAILABLE"
    m = harness.parse_metrics(client.metrics())
    assert m["holdfast_degraded_answers_total"] >= 1
    assert m['holdfast_degraded_requests_total{op="hold"}'] >= 1
    redis.start()
    daemon.wait_ready()
    r = client.hold("product-modify", "10001", ["edit"])
    assert code_name(r.code) == "OK" and not r.degraded and r.hold.token


def test_paused_redis_times_out_and_is_never_a_grant(client, daemon, redis):
    redis.pause()
    try:
        started = time.monotonic()
        r = client.hold("seat", "pause", ["1"], timeout_ms=300)
        elapsed = time.monotonic() - started
    finally:
        redis.resume()
    assert code_name(r.code) in ("DEADLINE_EXCEEDED", "UNAVAILABLE"), r
    assert not r.hold.token
    assert elapsed < 0.3 + 2.0  # its deadline, plus slack for valgrind
    daemon.wait_ready()
    with Client(daemon.socket) as c:
        # Whatever Redis did with the paused command, the answer was not a
        # grant; the daemon still serves.
        r = c.hold("seat", "pause", ["2"])
        assert code_name(r.code) == "OK"


def test_command_timeout_shorter_than_deadline_is_unavailable(make_daemon, redis):
    d = make_daemon(redis_extra="command_timeout_ms = 100")
    with Client(d.socket) as c:
        redis.pause()
        try:
            r = c.hold("seat", "ct", ["1"], timeout_ms=2000)
        finally:
            redis.resume()
        assert code_name(r.code) == "UNAVAILABLE" and "timed out" in r.message


def test_min_replicas_ack_withdraws_unreplicated_grants(make_daemon, redis):
    ns = """seat = { min_replicas_ack = 1, replicas_ack_timeout_ms = 100 },"""
    d = make_daemon(namespaces=ns)
    with Client(d.socket) as c:
        r = c.hold("seat", "repl", ["1"], timeout_ms=2000)
        assert code_name(r.code) == "UNAVAILABLE" and "replicas" in r.message, r
        assert redis.cmd("EXISTS", "hf:{seat:repl}:1") == 0
        m = harness.parse_metrics(c.metrics())
        assert m["holdfast_replica_ack_failures_total"] >= 1


def test_min_replicas_ack_grants_with_a_replica(workdir):
    # The primary listens on TCP too so a replica can follow it.
    import socket as s
    sock = s.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    primary = harness.RedisServer(workdir, name="primary")
    primary.port = port
    primary.extra_args = ["--bind", "127.0.0.1", "--repl-diskless-sync-delay", "0"]
    primary.start()
    replica = harness.RedisServer(workdir, name="replica2",
                                  extra_args=["--replicaof", "127.0.0.1", str(port)]).start()
    d = harness.Daemon(workdir, primary.address,
                       namespaces="seat = { min_replicas_ack = 1, replicas_ack_timeout_ms = 2000 },")
    try:
        harness.wait_for(lambda: "state=online" in primary.cmd("INFO", "replication"),
                         what="the replica to attach")
        d.start()
        with Client(d.socket) as c:
            r = c.hold("seat", "repl", ["1"], timeout_ms=5000)
            assert code_name(r.code) == "OK", r
            harness.wait_for(lambda: replica.cmd("GET", "hf:{seat:repl}:1") == r.hold.token,
                             what="the replica to have the hold")
    finally:
        d.stop()
        replica.stop()
        primary.stop()
