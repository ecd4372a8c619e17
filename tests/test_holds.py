"""Hold, Extend, Release and Status against a real redis-server."""
import socket
import struct
import time

import harness
from harness import Client, code_name, pb


def test_hold_extend_release_round_trip(client, redis):
    r = client.hold("seat", "run-2026-12-01-KTX101", ["12", "13"], ttl_ms=5000)
    assert code_name(r.code) == "OK", r.message
    token, fence = r.hold.token, r.hold.fence
    assert token.startswith("%d." % fence)
    assert r.hold.ttl_ms == 5000
    assert redis.cmd("GET", "hf:{seat:run-2026-12-01-KTX101}:12") == token
    assert int(redis.cmd("GET", "hf:{seat:run-2026-12-01-KTX101}:#fence")) == fence
    assert 4000 < redis.cmd("PTTL", "hf:{seat:run-2026-12-01-KTX101}:13") <= 5000

    r = client.extend("seat", "run-2026-12-01-KTX101", ["12", "13"], token, ttl_ms=60000)
    assert code_name(r.code) == "OK" and r.extend.ttl_ms == 60000
    assert redis.cmd("PTTL", "hf:{seat:run-2026-12-01-KTX101}:13") > 50000

    r = client.release("seat", "run-2026-12-01-KTX101", ["12", "13"], token)
    assert code_name(r.code) == "OK" and r.release.released == 2
    assert redis.cmd("EXISTS", "hf:{seat:run-2026-12-01-KTX101}:12") == 0
    # The fence counter stays: it never goes backwards.
    assert int(redis.cmd("GET", "hf:{seat:run-2026-12-01-KTX101}:#fence")) == fence


def test_fences_rise_and_tokens_are_fresh(client):
    seen = []
    for _ in range(5):
        r = client.hold("seat", "p1", ["1"], ttl_ms=1000)
        assert code_name(r.code) == "OK"
        seen.append((r.hold.fence, r.hold.token))
        assert code_name(client.release("seat", "p1", ["1"], r.hold.token).code) == "OK"
    fences = [f for f, _ in seen]
    assert fences == sorted(fences) and len(set(fences)) == 5
    assert len({t for _, t in seen}) == 5


def test_fence_survives_a_lost_counter(client, redis):
    first = client.hold("seat", "p1", ["1"], ttl_ms=1000).hold
    client.release("seat", "p1", ["1"], first.token)
    redis.cmd("DEL", "hf:{seat:p1}:#fence")  # as after a failover without persistence
    second = client.hold("seat", "p1", ["1"], ttl_ms=1000).hold
    assert second.fence > first.fence


def test_100_concurrent_holds_on_one_seat_grant_exactly_one(daemon):
    clients = [Client(daemon.socket) for _ in range(100)]
    try:
        req = pb().Request(hold=pb().HoldRequest(namespace="seat", partition="show-1",
                                                 ids=["E7"], ttl_ms=10000))
        for i, c in enumerate(clients):
            req.id = i + 1
            c.send(id=req.id, hold=req.hold)
        results = [c.recv() for c in clients]
    finally:
        for c in clients:
            c.close()
    codes = [code_name(r.code) for r in results]
    assert codes.count("OK") == 1, codes
    assert codes.count("HELD_BY_ANOTHER") == 99, codes
    for r in results:
        if code_name(r.code) == "HELD_BY_ANOTHER":
            assert r.error.resource_id == "E7"


def test_expiry_sequence(client, daemon, redis):
    key = "hf:{seat:run-1}:7"
    a = client.hold("seat", "run-1", ["7"], ttl_ms=200)
    assert code_name(a.code) == "OK"
    harness.wait_for(lambda: redis.cmd("PTTL", key) == -2, timeout=5, what="A's hold to expire")
    with Client(daemon.socket) as other:
        b = other.hold("seat", "run-1", ["7"], ttl_ms=30000)
        assert code_name(b.code) == "OK"
        assert b.hold.fence > a.hold.fence
        # A comes back late: refused as held by another, B's key untouched.
        r = client.release("seat", "run-1", ["7"], a.hold.token)
        assert code_name(r.code) == "HELD_BY_ANOTHER" and r.release.released == 0
        assert r.error.resource_id == "7"
        r = client.extend("seat", "run-1", ["7"], a.hold.token, ttl_ms=60000)
        assert code_name(r.code) == "HELD_BY_ANOTHER"
        assert redis.cmd("GET", key) == b.hold.token
        assert redis.cmd("PTTL", key) <= 30000
        assert code_name(other.release("seat", "run-1", ["7"], b.hold.token).code) == "OK"
    st = client.status("seat", "run-1", ["7"])
    assert st.status.resources[0].state == pb().RESOURCE_STATE_FREE


def test_release_and_extend_of_an_expired_hold_say_not_held(client, redis):
    a = client.hold("seat", "run-1", ["8"], ttl_ms=50)
    harness.wait_for(lambda: redis.cmd("EXISTS", "hf:{seat:run-1}:8") == 0, what="expiry")
    assert code_name(client.release("seat", "run-1", ["8"], a.hold.token).code) == "NOT_HELD"
    assert code_name(client.extend("seat", "run-1", ["8"], a.hold.token).code) == "NOT_HELD"


def test_multi_id_hold_with_one_held_holds_nothing(client, redis):
    first = client.hold("seat", "run-2", ["E8"], ttl_ms=10000)
    assert code_name(first.code) == "OK"
    r = client.hold("seat", "run-2", ["E7", "E8", "E9"], ttl_ms=10000)
    assert code_name(r.code) == "HELD_BY_ANOTHER" and r.error.resource_id == "E8"
    assert not r.HasField("hold") or not r.hold.token
    assert redis.cmd("EXISTS", "hf:{seat:run-2}:E7", "hf:{seat:run-2}:E9") == 0
    st = client.status("seat", "run-2", ["E7", "E8", "E9"])
    states = [x.state for x in st.status.resources]
    assert states == [pb().RESOURCE_STATE_FREE, pb().RESOURCE_STATE_HELD, pb().RESOURCE_STATE_FREE]


def test_extend_is_all_or_nothing(client, redis):
    a = client.hold("seat", "run-3", ["1", "2"], ttl_ms=5000)
    redis.cmd("DEL", "hf:{seat:run-3}:2")
    r = client.extend("seat", "run-3", ["1", "2"], a.hold.token, ttl_ms=60000)
    assert code_name(r.code) == "NOT_HELD" and r.error.resource_id == "2"
    assert redis.cmd("PTTL", "hf:{seat:run-3}:1") <= 5000


def test_release_frees_what_the_token_holds_and_names_the_rest(client):
    a = client.hold("seat", "run-4", ["1", "2"], ttl_ms=5000)
    b = client.hold("seat", "run-4", ["3"], ttl_ms=5000)
    r = client.release("seat", "run-4", ["1", "3", "2"], a.hold.token)
    assert code_name(r.code) == "HELD_BY_ANOTHER"
    assert r.error.resource_id == "3" and r.release.released == 2
    st = client.status("seat", "run-4", ["1", "2", "3"], token=b.hold.token)
    assert [x.state for x in st.status.resources] == [
        pb().RESOURCE_STATE_FREE, pb().RESOURCE_STATE_FREE, pb().RESOURCE_STATE_HELD]
    assert st.status.resources[2].owned


def test_status_reports_ownership_but_never_a_token(client):
    a = client.hold("seat", "run-5", ["1"], ttl_ms=5000)
    st = client.status("seat", "run-5", ["1"], token=a.hold.token)
    res = st.status.resources[0]
    assert res.state == pb().RESOURCE_STATE_HELD and res.owned and 0 < res.ttl_ms <= 5000
    raw = st.SerializeToString()
    assert a.hold.token.encode() not in raw and a.hold.token.split(".")[1].encode() not in raw
    other = client.status("seat", "run-5", ["1"])
    assert not other.status.resources[0].owned


def test_confirmed_marker_answers_confirmed(client, redis):
    redis.cmd("SET", "hf:{seat:run-6}:A1", "!confirmed:123")
    r = client.hold("seat", "run-6", ["A0", "A1"])
    assert code_name(r.code) == "CONFIRMED" and r.error.resource_id == "A1"
    assert client.status("seat", "run-6", ["A1"]).status.resources[0].state == \
        pb().RESOURCE_STATE_CONFIRMED


def test_invalid_arguments_name_the_field(client):
    cases = [
        (dict(ns="seat", partition="run{1}", ids=["1"]), "partition"),
        (dict(ns="seat", partition="a:b", ids=["1"]), "partition"),
        (dict(ns="seat", partition="", ids=["1"]), "partition"),
        (dict(ns="seat", partition="r", ids=[]), "ids"),
        (dict(ns="seat", partition="r", ids=["ok", "bad id"]), "ids[1]"),
        (dict(ns="seat", partition="r", ids=["x" * 129]), "ids[0]"),
        (dict(ns="seat", partition="r", ids=["1", "1"]), "ids[1]"),
        (dict(ns="seat", partition="r", ids=[str(i) for i in range(65)]), "ids"),
        (dict(ns="seat", partition="r", ids=["1"], ttl_ms=5), "ttl_ms"),
        (dict(ns="seat", partition="r", ids=["1"], ttl_ms=600001), "ttl_ms"),
        (dict(ns="se at", partition="r", ids=["1"]), "namespace"),
    ]
    for args, field in cases:
        r = client.hold(args["ns"], args["partition"], args["ids"], ttl_ms=args.get("ttl_ms", 0))
        assert code_name(r.code) == "INVALID_ARGUMENT", (args, r)
        assert r.error.field == field, (args, r.error)
        assert r.message
    r = client.hold("nope", "r", ["1"])
    assert code_name(r.code) == "NOT_FOUND" and r.error.field == "namespace"
    r = client.release("seat", "r", ["1"], "not-a-token")
    assert code_name(r.code) == "INVALID_ARGUMENT" and r.error.field == "token"
    r = client.extend("seat", "r", ["1"], "")
    assert code_name(r.code) == "INVALID_ARGUMENT" and r.error.field == "token"


def test_many_requests_in_flight_on_one_connection(client):
    ids = {}
    for i in range(200):
        rid = client.send(id=10000 + i, hold=pb().HoldRequest(
            namespace="seat", partition="pipe", ids=["s%d" % (i % 50)], ttl_ms=5000))
        ids[rid] = i % 50
    answers = {}
    for _ in range(200):
        r = client.recv()
        assert r.id in ids and r.id not in answers
        answers[r.id] = code_name(r.code)
    granted = [ids[i] for i, c in answers.items() if c == "OK"]
    assert sorted(granted) == list(range(50))
    assert sum(1 for c in answers.values() if c == "HELD_BY_ANOTHER") == 150


def test_correlation_id_is_echoed_and_logged(client, daemon):
    # Status, not Health: probes are logged at debug unless log.probes is set.
    r = client.call(correlation_id="trace-abc:123",
                    status=pb().StatusRequest(namespace="seat", partition="cid", ids=["1"]))
    assert r.correlation_id == "trace-abc:123"
    generated = client.health()
    assert len(generated.correlation_id) == 16
    bad = client.call(correlation_id="has space", health=pb().HealthRequest())
    assert code_name(bad.code) == "INVALID_ARGUMENT" and bad.error.field == "correlation_id"
    log = daemon.wait_log("cid=trace-abc:123 op=status")
    assert "has space" not in log


def test_log_line_has_the_request_fields(client, daemon):
    r = client.hold("seat", "run-log", ["1", "2"], ttl_ms=1000, correlation_id="log-check")
    line = [l for l in daemon.wait_log("cid=log-check").splitlines() if "cid=log-check" in l][0]
    for part in ("op=hold", "ns=seat", "partition=run-log", "ids=1,2", "result=OK",
                 "latency_us=", "token_fp="):
        assert part in line, line
    assert r.hold.token not in line


def test_max_inflight_per_connection(make_daemon, redis):
    d = make_daemon(limits="max_inflight_per_conn = 4")
    with Client(d.socket) as c:
        redis.pause()
        try:
            for i in range(10):
                c.send(timeout_ms=3000, hold=pb().HoldRequest(namespace="seat", partition="lim",
                                                               ids=[str(i)]))
            first = [c.recv() for _ in range(6)]
        finally:
            redis.resume()
        rest = [c.recv() for _ in range(4)]
    assert all(code_name(r.code) == "RESOURCE_EXHAUSTED" for r in first), first
    assert all(code_name(r.code) != "RESOURCE_EXHAUSTED" for r in rest)
