"""A buggy or hostile client must never change what another client gets.

Each scenario of issue 10 as a test against a real redis-server, PostgreSQL
and holdfastd: strings with NUL bytes or invalid UTF-8 in every field of
every operation, floods of tiny deadlines next to a well-behaved client, and
grants that arrive after their answer or after their client has gone."""
import threading
import time

import pytest

import pgharness as pgh
from harness import Client, code_name, parse_metrics, pb, wait_for
from pgharness import cancel, confirm, hold_token


@pytest.fixture
def cdaemon(pgdb, make_daemon):
    return make_daemon(namespaces=pgh.NAMESPACES, top_extra=pgdb.config(),
                       limits="min_timeout_ms = 1")


@pytest.fixture
def cclient(cdaemon):
    with Client(cdaemon.socket) as c:
        yield c


MARK = "~"  # a placeholder byte no other field of these requests can contain


def request_with(op, field, token="1.AAAAAAAAAAAAAAAAAAAAAA"):
    """A Request for `op` whose `field` holds the placeholder MARK; the other
    fields are valid."""
    base = dict(namespace="seat", partition="hostile", ids=["A1", "A2"])
    if op in ("extend", "release", "status", "confirm"):
        base["token"] = token
    if op in ("confirm", "cancel"):
        base["idempotency_key"] = "key-1"
        base["reference"] = "order-1"
    cid = "cid-1"
    if field == "correlation_id":
        cid = "cid" + MARK + "1"
    elif field.startswith("ids["):
        i = int(field[4:-1])
        base["ids"][i] = "A" + MARK + "9"
    else:
        base[field] = base[field][:1] + MARK + base[field][1:]
    msg_type = {"hold": "HoldRequest", "extend": "ExtendRequest", "release": "ReleaseRequest",
                "status": "StatusRequest", "confirm": "ConfirmRequest",
                "cancel": "CancelRequest"}[op]
    sub = getattr(pb(), msg_type)(**base)
    return pb().Request(id=77, correlation_id=cid, timeout_ms=2000, **{op: sub})


def raw_call(client, req, replace):
    """Send req with the placeholder byte replaced by `replace` on the wire."""
    body = req.SerializeToString()
    assert body.count(MARK.encode()) == 1
    body = body.replace(MARK.encode(), replace)
    client.send_raw(len(body).to_bytes(4, "big") + body)
    return client.recv()


FIELDS = {
    "hold": ["namespace", "partition", "ids[0]", "ids[1]", "correlation_id"],
    "extend": ["namespace", "partition", "ids[0]", "ids[1]", "token", "correlation_id"],
    "release": ["namespace", "partition", "ids[0]", "ids[1]", "token", "correlation_id"],
    "status": ["namespace", "partition", "ids[0]", "ids[1]", "token", "correlation_id"],
    "confirm": ["namespace", "partition", "ids[0]", "ids[1]", "token", "idempotency_key",
                "reference", "correlation_id"],
    "cancel": ["namespace", "partition", "ids[0]", "ids[1]", "idempotency_key", "reference",
               "correlation_id"],
}
BAD_BYTES = [b"\x00", b"\xff", b"\xc0"]  # NUL, never UTF-8, an overlong lead byte


@pytest.mark.parametrize("op", sorted(FIELDS))
def test_every_string_field_refuses_nul_and_invalid_utf8(pgdb, cdaemon, cclient, redis, op):
    # Something to lose: a live hold on A1.
    token, _ = hold_token(cclient, "seat", "hostile", ["A1"])
    before_keys = sorted(redis.cmd("KEYS", "hf:*"))
    before_db = pgdb.dump(data_only=True)
    for field in FIELDS[op]:
        for bad in BAD_BYTES:
            r = raw_call(cclient, request_with(op, field, token=token), bad)
            assert code_name(r.code) == "INVALID_ARGUMENT", (op, field, bad, r)
            assert r.id == 77 and r.error.field == field, (op, bad, r.error.field, field)
            # The answer never echoes a cut-short correlation id.
            assert r.correlation_id not in ("cid", "cid-1")
    assert sorted(redis.cmd("KEYS", "hf:*")) == before_keys
    assert pgdb.dump(data_only=True) == before_db
    # The hold is untouched and still this token's.
    assert cclient.status("seat", "hostile", ["A1"], token).status.resources[0].owned


def test_an_id_cut_at_a_nul_never_reaches_the_shorter_id(cdaemon, cclient):
    """The issue's first example: "E\\x007" acted on "E"."""
    token, _ = hold_token(cclient, "seat", "cut", ["E"])
    req = pb().Request(id=5, release=pb().ReleaseRequest(
        namespace="seat", partition="cut", ids=["E" + MARK + "7"], token=token))
    r = raw_call(cclient, req, b"\x00")
    assert code_name(r.code) == "INVALID_ARGUMENT" and r.error.field == "ids[0]"
    assert cclient.status("seat", "cut", ["E"], token).status.resources[0].owned


def test_idempotency_keys_that_differ_after_a_nul_do_not_collide(pgdb, cdaemon, cclient):
    token, _ = hold_token(cclient, "seat", "keys", ["1"])
    for suffix in (b"a", b"b"):
        req = pb().Request(id=9, confirm=pb().ConfirmRequest(
            namespace="seat", partition="keys", ids=["1"], token=token,
            idempotency_key="order-7" + MARK + suffix.decode()))
        body = req.SerializeToString().replace(MARK.encode(), b"\x00")
        cclient.send_raw(len(body).to_bytes(4, "big") + body)
        r = cclient.recv()
        assert code_name(r.code) == "INVALID_ARGUMENT" and r.error.field == "idempotency_key"
    assert pgdb.value("SELECT count(*) FROM holdfast.idempotency") == "0"


def log_resets(daemon):
    text = daemon.log_text()
    return [ln for ln in text.splitlines()
            if "resetting connection" in ln or "connection 0 reset" in ln
            or "connection 1 reset" in ln]


def test_a_flood_of_tiny_deadlines_costs_nobody_else_anything(pgdb, cdaemon, redis):
    """One client pipelines Status and bogus Confirms with timeout_ms=1 while
    another holds and confirms: the other's success rate stays >= 99% and no
    backend connection is reset."""
    stop = time.monotonic() + 8
    flood_sent = [0]

    def flood():
        with Client(cdaemon.socket) as c:
            bogus = "1.AAAAAAAAAAAAAAAAAAAAAA"
            n = 0
            while time.monotonic() < stop:
                for _ in range(50):
                    n += 1
                    if n % 5:
                        c.send(status=pb().StatusRequest(namespace="seat", partition="flood",
                                                         ids=["1", "2"]), timeout_ms=1)
                    else:
                        c.send(confirm=pb().ConfirmRequest(
                            namespace="seat", partition="flood", ids=["1"], token=bogus,
                            idempotency_key="flood-%d" % n), timeout_ms=1)
                for _ in range(50):
                    c.recv()
                flood_sent[0] = n

    flooders = [threading.Thread(target=flood) for _ in range(2)]
    for t in flooders:
        t.start()
    ok = failed = 0
    codes = {}
    with Client(cdaemon.socket) as c:
        i = 0
        while time.monotonic() < stop:
            i += 1
            part = "good-%d" % i
            h = c.hold("seat", part, ["1"], timeout_ms=2000)
            r = confirm(c, "seat", part, ["1"], h.hold.token, "good-%d" % i,
                        timeout_ms=2000) if code_name(h.code) == "OK" else h
            code = code_name(r.code)
            codes[code] = codes.get(code, 0) + 1
            if code == "OK":
                ok += 1
            else:
                failed += 1
    for t in flooders:
        t.join()
    assert flood_sent[0] > 500, flood_sent
    assert ok > 20, codes
    assert ok / (ok + failed) >= 0.99, codes
    assert log_resets(cdaemon) == []


def test_a_grant_after_its_deadline_is_released_at_once(daemon, client, redis):
    redis.pause()
    try:
        t = threading.Timer(0.3, redis.resume)
        t.start()
        r = client.hold("seat", "late", ["1", "2"], timeout_ms=100)
        assert code_name(r.code) == "DEADLINE_EXCEEDED", r
        t.join()
    finally:
        redis.resume()

    def released():
        m = parse_metrics(client.metrics())
        return m["holdfast_late_grants_released_total"] >= 1
    wait_for(released, timeout=5, what="the late grant to be released")
    # Nobody holds the seats: another client gets them at once.
    with Client(daemon.socket) as other:
        assert code_name(other.hold("seat", "late", ["1", "2"]).code) == "OK"


def test_a_grant_whose_client_has_gone_is_released_at_once(daemon, redis):
    before = parse_metrics(Client(daemon.socket).metrics())["holdfast_late_grants_released_total"]
    redis.pause()
    try:
        c = Client(daemon.socket)
        c.send(hold=pb().HoldRequest(namespace="seat", partition="gone", ids=["1"]),
               timeout_ms=5000)
        time.sleep(0.1)
        c.close()  # the client dies before Redis answers
        time.sleep(0.1)
    finally:
        redis.resume()
    with Client(daemon.socket) as other:
        wait_for(lambda: parse_metrics(other.metrics())["holdfast_late_grants_released_total"]
                 > before, timeout=5, what="the orphaned grant to be released")
        assert code_name(other.hold("seat", "gone", ["1"]).code) == "OK"


GUARDED = pgh.NAMESPACES + """
    guarded = { confirmable = true, admit = function(r)
        if r.op == "confirm" and r.reference == "blocked" then
            return false, "orders marked blocked may not buy"
        end
        if r.op == "cancel" and r.idempotency_key:sub(1, 4) == "deny" then
            return false, "refunds need a supervisor"
        end
        if r.op ~= "hold" and r.op ~= "confirm" and r.op ~= "cancel" then
            error("unexpected op " .. tostring(r.op))
        end
    end },
"""


def test_admit_hooks_see_and_can_refuse_confirm_and_cancel(pgdb, make_daemon):
    d = make_daemon(namespaces=GUARDED, top_extra=pgdb.config())
    with Client(d.socket) as c:
        token, _ = hold_token(c, "guarded", "g1", ["1"])
        r = confirm(c, "guarded", "g1", ["1"], token, "k-blocked", reference="blocked")
        assert code_name(r.code) == "PERMISSION_DENIED" and "may not buy" in r.message, r
        assert pgdb.claims("guarded", "g1") == []
        assert pgdb.value("SELECT count(*) FROM holdfast.idempotency") == "0"
        r = confirm(c, "guarded", "g1", ["1"], token, "k-ok", reference="ok")
        assert code_name(r.code) == "OK", r
        r = cancel(c, "guarded", "g1", ["1"], "deny-1", "ok")
        assert code_name(r.code) == "PERMISSION_DENIED" and "supervisor" in r.message, r
        assert len(pgdb.claims("guarded", "g1")) == 1
        r = cancel(c, "guarded", "g1", ["1"], "refund-1", "ok")
        assert code_name(r.code) == "OK" and r.cancel.cancelled == 1, r
