"""Release through native DELEX ... IFEQ, and its detection, against the
RESP test double (no packaged Redis has DELEX); every other command runs on
the real redis-server behind it."""
import pytest

import harness
from delex_double import DelexDouble
from harness import Client, code_name


@pytest.fixture
def double_factory(workdir, redis):
    made = []

    def make(command_info):
        d = DelexDouble(workdir, redis.socket, command_info)
        made.append(d)
        return d

    yield make
    for d in made:
        d.close()


def daemon_behind(workdir, double, release_path="auto"):
    d = harness.Daemon(workdir, double.address, name="hf-" + double.command_info,
                       redis_extra='release_path = "%s"' % release_path)
    return d.start()


def test_release_uses_delex_when_the_server_has_it(workdir, double_factory, redis):
    double = double_factory("present")
    d = daemon_behind(workdir, double)
    try:
        with Client(d.socket) as c:
            assert c.health().health.release_path == "delex"
            a = c.hold("seat", "dx", ["1", "2"], ttl_ms=5000)
            assert code_name(a.code) == "OK"
            r = c.release("seat", "dx", ["1", "2"], a.hold.token)
            assert code_name(r.code) == "OK" and r.release.released == 2
            delexed = [args for cmd, args in double.seen if cmd == "DELEX"]
            assert [b"hf:{seat:dx}:1", b"IFEQ", a.hold.token.encode()] in delexed
            assert redis.cmd("EXISTS", "hf:{seat:dx}:1", "hf:{seat:dx}:2") == 0
            # DELEX returning 0 is classified: not held vs held by another.
            assert code_name(c.release("seat", "dx", ["1"], a.hold.token).code) == "NOT_HELD"
            b = c.hold("seat", "dx", ["2"], ttl_ms=5000)
            r = c.release("seat", "dx", ["1", "2"], a.hold.token)
            assert code_name(r.code) == "NOT_HELD" and r.error.resource_id == "1"
            r = c.release("seat", "dx", ["2"], a.hold.token)
            assert code_name(r.code) == "HELD_BY_ANOTHER" and r.release.released == 0
            assert redis.cmd("GET", "hf:{seat:dx}:2") == b.hold.token
            redis.cmd("SET", "hf:{seat:dx}:3", "!confirmed:1")
            assert code_name(c.release("seat", "dx", ["3"], a.hold.token).code) == "CONFIRMED"
            m = harness.parse_metrics(c.metrics())
            assert m['holdfast_release_path_info{path="delex"}'] == 1
    finally:
        d.stop()


def test_absent_delex_keeps_the_script(workdir, double_factory):
    double = double_factory("absent")
    d = daemon_behind(workdir, double)
    try:
        with Client(d.socket) as c:
            assert c.health().health.release_path == "script"
            a = c.hold("seat", "ab", ["1"], ttl_ms=5000)
            assert code_name(c.release("seat", "ab", ["1"], a.hold.token).code) == "OK"
            assert not [x for x in double.seen if x[0] == "DELEX"]
    finally:
        d.stop()


def test_denied_command_info_is_not_taken_as_an_old_server(workdir, double_factory):
    double = double_factory("denied")
    d = daemon_behind(workdir, double)
    try:
        with Client(d.socket) as c:
            assert c.health().health.release_path == "delex"
            a = c.hold("seat", "dn", ["1"], ttl_ms=5000)
            assert code_name(c.release("seat", "dn", ["1"], a.hold.token).code) == "OK"
        d.wait_log("probing DELEX directly")
    finally:
        d.stop()


def test_configured_script_release_ignores_delex(workdir, double_factory):
    double = double_factory("present")
    d = daemon_behind(workdir, double, release_path="script")
    try:
        with Client(d.socket) as c:
            assert c.health().health.release_path == "script"
            a = c.hold("seat", "cs", ["1"], ttl_ms=5000)
            assert code_name(c.release("seat", "cs", ["1"], a.hold.token).code) == "OK"
        assert not [x for x in double.seen if x[0] == "DELEX"]
    finally:
        d.stop()


def native_release(redis):
    """What the server under test offers: "delex" (Redis 8.4+), "delifeq"
    (Valkey 9) or "script" (Redis 7)."""
    delex, delifeq = redis.cmd("COMMAND", "INFO", "DELEX", "DELIFEQ")
    return "delex" if delex else "delifeq" if delifeq else "script"


def test_acl_denied_command_info_on_a_real_server_probes(make_daemon, redis):
    # COMMAND INFO refused: the probes decide (Redis 7: "unknown command" for
    # both, so the script).
    expected = native_release(redis)
    redis.cmd("ACL", "SETUSER", "app", "on", ">pw", "~*", "+@all", "-command")
    d = make_daemon(redis_extra='username = "app", password = "pw"')
    with Client(d.socket) as c:
        assert c.health().health.release_path == expected
        a = c.hold("seat", "acl", ["1"], ttl_ms=5000)
        assert code_name(c.release("seat", "acl", ["1"], a.hold.token).code) == "OK"
    d.wait_log("probing DELEX directly")


def test_release_uses_the_servers_own_compare_and_delete(daemon, client, redis):
    """On Redis 8.4+ DELEX IFEQ, on Valkey 9 DELIFEQ, on Redis 7 the script:
    the answers are the same on every path."""
    assert client.health().health.release_path == native_release(redis)
    a = client.hold("seat", "native", ["1", "2"], ttl_ms=5000)
    b = client.hold("seat", "native", ["3"], ttl_ms=5000)
    r = client.release("seat", "native", ["1", "3"], a.hold.token)
    assert code_name(r.code) == "HELD_BY_ANOTHER" and r.error.resource_id == "3", r
    assert r.release.released == 1
    assert code_name(client.release("seat", "native", ["2"], a.hold.token).code) == "OK"
    r = client.release("seat", "native", ["2"], a.hold.token)
    assert code_name(r.code) == "NOT_HELD" and r.release.released == 0
    assert code_name(client.release("seat", "native", ["3"], b.hold.token).code) == "OK"
