"""Process life: drain on SIGTERM, holdfastctl, and tokens never logged."""
import signal
import time

import harness
from harness import Client, code_name, pb


def test_sigterm_drains_in_flight_requests(make_daemon, redis):
    d = make_daemon()
    c = Client(d.socket)
    redis.pause()
    try:
        c.send(timeout_ms=5000, hold=pb().HoldRequest(namespace="seat", partition="drain", ids=["1"]))
        time.sleep(0.1)
        d.signal(signal.SIGTERM)
        time.sleep(0.2)
        assert d.proc.poll() is None, "exited with a request in flight"
    finally:
        redis.resume()
    r = c.recv()
    assert code_name(r.code) in ("OK", "UNAVAILABLE")
    c.close()
    assert d.proc.wait(10) == 0
    assert "draining 1 requests" in d.log_text()


def test_sigterm_with_nothing_in_flight_exits_at_once(make_daemon):
    # A long drain bound: exiting well before it shows nothing waited for it.
    daemon = make_daemon(limits="drain_timeout_ms = 60000")
    started = time.monotonic()
    daemon.signal(signal.SIGTERM)
    assert daemon.proc.wait(30) == 0
    assert time.monotonic() - started < 20


def test_holdfastctl_round_trip(daemon):
    r = daemon.ctl("hold", "seat", "ctl-run", "A1", "A2", "--ttl", "60000")
    assert r.returncode == 0, r.stderr
    fields = dict(line.split("=", 1) for line in r.stdout.splitlines())
    token = fields["token"]
    harness.ISSUED_TOKENS.add(token)
    assert fields["ttl_ms"] == "60000" and token.startswith(fields["fence"] + ".")
    r = daemon.ctl("status", "seat", "ctl-run", "A1", "--token-stdin", input=token + "\n")
    assert r.returncode == 0 and "A1 state=held" in r.stdout and "owned=true" in r.stdout
    r = daemon.ctl("extend", "seat", "ctl-run", "A1", "A2", "--token-stdin", "--ttl", "1000",
                   input=token + "\n")
    assert r.returncode == 0 and "ttl_ms=1000" in r.stdout
    r = daemon.ctl("hold", "seat", "ctl-run", "A2")
    assert r.returncode == 1 and "code=HELD_BY_ANOTHER" in r.stdout and "resource_id=A2" in r.stdout
    r = daemon.ctl("release", "seat", "ctl-run", "A1", "A2", "--token-stdin", input=token + "\n")
    assert r.returncode == 0 and "released=2" in r.stdout
    r = daemon.ctl("health")
    assert r.returncode == 0 and "ready=true" in r.stdout and "library=holdfast_v1" in r.stdout
    r = daemon.ctl("library")
    assert r.returncode == 0 and "script_path=fcall" in r.stdout
    r = daemon.ctl("metrics")
    assert r.returncode == 0 and 'holdfast_requests_total{op="hold",result="OK"} 1' in r.stdout
    r = daemon.ctl("check-config", daemon.config)
    assert r.returncode == 0 and "ok" in r.stdout
    r = daemon.ctl("release", "seat", "ctl-run", "A1")
    assert r.returncode == 64 and "needs a token" in r.stderr  # a usage error


def test_holdfastctl_unreachable(workdir):
    import subprocess
    r = subprocess.run([harness.HOLDFASTCTL, "--socket", workdir + "/none.sock", "health"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "cannot connect" in r.stderr


def test_metrics_count_requests_by_op_and_result(client):
    sent = {("hold", "OK"): 0, ("hold", "HELD_BY_ANOTHER"): 0, ("release", "OK"): 0,
            ("hold", "INVALID_ARGUMENT"): 0, ("status", "OK"): 0}
    for i in range(7):
        r = client.hold("seat", "m", [str(i)], ttl_ms=5000)
        sent[("hold", code_name(r.code))] += 1
        r2 = client.hold("seat", "m", [str(i)], ttl_ms=5000)
        sent[("hold", code_name(r2.code))] += 1
        if i % 2:
            client.release("seat", "m", [str(i)], r.hold.token)
            sent[("release", "OK")] += 1
    client.hold("seat", "m{", ["1"])
    sent[("hold", "INVALID_ARGUMENT")] += 1
    client.status("seat", "m", ["1"])
    sent[("status", "OK")] += 1
    m = harness.parse_metrics(client.metrics())
    for (op, result), n in sent.items():
        assert m['holdfast_requests_total{op="%s",result="%s"}' % (op, result)] == n, (op, result)
    assert m['holdfast_request_duration_seconds_count{op="hold"}'] == 15


def test_no_issued_token_appears_in_any_log(make_daemon):
    d = make_daemon()
    with Client(d.socket) as c:
        tokens = []
        for i in range(20):
            r = c.hold("seat", "grep", [str(i)], ttl_ms=5000)
            tokens.append(r.hold.token)
            c.extend("seat", "grep", [str(i)], r.hold.token)
            c.status("seat", "grep", [str(i)], r.hold.token)
            c.release("seat", "grep", [str(i)], r.hold.token)
            c.release("seat", "grep", [str(i)], r.hold.token)  # NOT_HELD path too
    d.stop()
    log = d.log_text()
    assert "token_fp=" in log
    for t in tokens:
        assert t not in log and t.split(".")[1] not in log
