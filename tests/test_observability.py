"""Observability: Prometheus metrics over HTTP (metrics.http), /healthz and
/readyz, the exposition's hygiene, journald priorities and log.probes.

The exposition is validated by lint_exposition below (the rules of
`promtool check metrics`: HELP and TYPE before a family's samples, one block
per family, valid names and label sets, no duplicate series, counters named
*_total, histograms with ordered cumulative buckets ending in +Inf = _count)
and parsed by the Prometheus Python client's parser (Debian:
python3-prometheus-client). Where `promtool` is on PATH, or taken out of
Debian's prometheus package by tools/deps-promtool.sh (the test command does
that), it is run too."""
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

import harness
from harness import Client, code_name, pb, wait_for

HTTP_ANY_PORT = 'metrics = { http = true, http_address = "127.0.0.1:0" },'
PROMTOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "deps",
                        "promtool", "usr", "bin", "promtool")
RESOURCE_OPS = {"hold", "extend", "release", "confirm", "cancel", "status", "set_capacity",
                "get_capacity"}


# ---- helpers ----

def http_port(daemon):
    log = daemon.wait_log("metrics.http: serving")
    m = re.search(r"metrics\.http: serving /metrics, /healthz, /readyz on (\S+):(\d+)\n", log)
    assert m, log
    return m.group(1), int(m.group(2))


def fetch(daemon, path, method="GET"):
    """(status, content type, body) of one HTTP request to the daemon."""
    host, port = http_port(daemon)
    req = urllib.request.Request("http://%s:%d%s" % (host, port, path), method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def shape(text):
    """The exposition without its values: comment lines and series names."""
    return [line if line.startswith("#") else line.rsplit(" ", 1)[0]
            for line in text.splitlines()]


def samples(text):
    return harness.parse_metrics(text)


NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)\Z")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def parse_labels(text):
    """'{a="1",b="2"}' -> (('a', '1'), ('b', '2')); AssertionError if malformed."""
    if not text:
        return ()
    inner, pairs, pos = text[1:-1], [], 0
    while pos < len(inner):
        m = LABEL.match(inner, pos)
        assert m, "bad label set %s" % text
        pairs.append((m.group(1), m.group(2)))
        pos = m.end()
        if pos < len(inner):
            assert inner[pos] == ",", "bad label set %s" % text
            pos += 1
    names = [n for n, _ in pairs]
    assert len(names) == len(set(names)), "label repeated in %s" % text
    return tuple(pairs)


def family_of(name, types):
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and types.get(base) == "histogram":
            return base
    return name


def lint_exposition(text):
    """promtool's rules for the text format 0.0.4; returns {family: type}."""
    assert text.endswith("\n"), "the exposition must end with a newline"
    types, helped, done, series = {}, set(), set(), set()
    current = None
    buckets = {}  # (family, labels without le) -> [(le, value)]
    counts = {}
    for line in text.splitlines():
        assert line, "empty line in the exposition"
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            assert len(parts) == 4 and parts[3], "incomplete line %r" % line
            name = parts[2]
            assert NAME.match(name), "bad metric name %r" % name
            if name != current:
                assert name not in done, "family %s appears in two blocks" % name
                if current:
                    done.add(current)
                current = name
            if parts[1] == "HELP":
                assert name not in helped, "second HELP for %s" % name
                helped.add(name)
            else:
                assert name not in types, "second TYPE for %s" % name
                assert parts[3] in TYPES, "bad type %r" % line
                types[name] = parts[3]
            continue
        if line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, "bad sample line %r" % line
        name, labels, value = m.group(1), parse_labels(m.group(2)), m.group(3)
        number = float(value)  # also +Inf, -Inf, NaN
        family = family_of(name, types)
        assert family == current, "%s outside its family's block (in %s)" % (name, current)
        assert family in types and family in helped, "%s has no TYPE or HELP" % family
        key = (name, labels)
        assert key not in series, "duplicate series %s" % line
        series.add(key)
        kind = types[family]
        if kind == "counter":
            assert name.endswith("_total"), "counter %s is not named *_total" % name
            assert number >= 0, line
        if kind == "histogram":
            rest = tuple(p for p in labels if p[0] != "le")
            if name.endswith("_bucket"):
                les = [v for k, v in labels if k == "le"]
                assert len(les) == 1, "bucket without le: %s" % line
                buckets.setdefault((family, rest), []).append((float(les[0]), number))
            elif name.endswith("_count"):
                counts[(family, rest)] = number
            else:
                assert name.endswith("_sum"), line
        else:
            assert not name.endswith("_bucket"), line
        if kind != "counter":
            assert not name.endswith("_total") or kind == "untyped", \
                "%s is a %s named like a counter" % (name, kind)
        assert not name.endswith("_info") or kind == "gauge", name
    for key, bs in buckets.items():
        les = [le for le, _ in bs]
        assert les == sorted(les) and len(set(les)) == len(les), "buckets out of order %s" % (key,)
        values = [v for _, v in bs]
        assert values == sorted(values), "buckets not cumulative %s" % (key,)
        assert les[-1] == float("inf"), "no +Inf bucket %s" % (key,)
        assert counts.get(key) == values[-1], "+Inf bucket differs from _count %s" % (key,)
    for family in types:
        assert family in helped, "%s has TYPE but no HELP" % family
    return types


def check_exposition(text):
    types = lint_exposition(text)
    from prometheus_client.parser import text_string_to_metric_families
    parsed = {f.name: f.type for f in text_string_to_metric_families(text)}
    # The client drops _total from counter family names.
    for name, kind in types.items():
        key = name[: -len("_total")] if kind == "counter" and name.endswith("_total") else name
        assert parsed.get(key) == kind, (name, kind, parsed.get(key))
    promtool = shutil.which("promtool") or (PROMTOOL if os.access(PROMTOOL, os.X_OK) else None)
    if promtool:
        r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 0, r.stdout + r.stderr
    return types


GOOD = """# HELP a_total A.
# TYPE a_total counter
a_total{op="x"} 1
# HELP h H.
# TYPE h histogram
h_bucket{le="0.1"} 1
h_bucket{le="+Inf"} 2
h_sum 0.3
h_count 2
"""

BAD = {
    "no TYPE": "# HELP g G.\ng 1\n",
    "no HELP": "# TYPE g gauge\ng 1\n",
    "counter name": "# HELP c C.\n# TYPE c counter\nc 1\n",
    "duplicate series": "# HELP g G.\n# TYPE g gauge\ng{a=\"1\"} 1\ng{a=\"1\"} 2\n",
    "two blocks": "# HELP g G.\n# TYPE g gauge\ng 1\n# HELP f F.\n# TYPE f gauge\nf 1\n"
                  "# HELP g G.\n",
    "label syntax": "# HELP g G.\n# TYPE g gauge\ng{a=1} 1\n",
    "value": "# HELP g G.\n# TYPE g gauge\ng one\n",
    "not cumulative": GOOD.replace('h_bucket{le="0.1"} 1', 'h_bucket{le="0.1"} 3'),
    "no +Inf": GOOD.replace('h_bucket{le="+Inf"} 2\n', ""),
    "count": GOOD.replace("h_count 2", "h_count 5"),
    "no newline": GOOD[:-1],
}


def test_the_exposition_check_rejects_mistakes():
    assert lint_exposition(GOOD) == {"a_total": "counter", "h": "histogram"}
    for what, text in BAD.items():
        with pytest.raises((AssertionError, ValueError)):
            lint_exposition(text)
            pytest.fail("accepted: " + what)


def holdfastd_version():
    out = subprocess.run([harness.HOLDFASTD, "--version"], capture_output=True, text=True,
                         timeout=10).stdout
    return re.match(r"holdfastd (\S+) \(library (\S+)\)", out).groups()


# ---- fixtures ----

@pytest.fixture
def http_daemon(make_daemon):
    return make_daemon(top_extra=HTTP_ANY_PORT)


# ---- the HTTP listener ----

def test_http_metrics_is_the_metrics_rpc(http_daemon):
    with Client(http_daemon.socket) as c:
        assert code_name(c.hold("seat", "obs", ["1"], ttl_ms=5000).code) == "OK"
        c.metrics()  # its own series exist from now on
        status, ctype, body = fetch(http_daemon, "/metrics")
        rpc = c.metrics()
    assert status == 200
    assert ctype.startswith("text/plain; version=0.0.4")
    assert shape(body) == shape(rpc)
    assert samples(body)['holdfast_requests_total{op="hold",result="OK"}'] == 1
    check_exposition(body)
    # A HEAD has the headers only.
    status, ctype, body = fetch(http_daemon, "/metrics", method="HEAD")
    assert status == 200 and body == "" and ctype.startswith("text/plain; version=0.0.4")


def test_healthz_and_readyz_follow_redis(http_daemon, redis):
    assert fetch(http_daemon, "/healthz")[::2] == (200, "live\n")
    assert fetch(http_daemon, "/readyz")[::2] == (200, "ready\n")
    assert samples(fetch(http_daemon, "/metrics")[2])["holdfast_ready"] == 1
    redis.stop()
    try:
        wait_for(lambda: fetch(http_daemon, "/readyz")[0] == 503, what="/readyz 503")
        assert fetch(http_daemon, "/readyz")[2] == "not ready: redis down\n"
        assert fetch(http_daemon, "/healthz")[0] == 200  # alive all the same
        assert samples(fetch(http_daemon, "/metrics")[2])["holdfast_ready"] == 0
        with Client(http_daemon.socket) as c:
            assert samples(c.metrics())["holdfast_ready"] == 0
    finally:
        redis.start()
    wait_for(lambda: fetch(http_daemon, "/readyz")[0] == 200, what="/readyz 200 again")
    assert samples(fetch(http_daemon, "/metrics")[2])["holdfast_ready"] == 1


def test_readyz_fails_while_draining(http_daemon, redis):
    c = Client(http_daemon.socket)
    redis.pause()
    try:
        c.send(timeout_ms=5000,
               hold=pb().HoldRequest(namespace="seat", partition="drain", ids=["1"]))
        time.sleep(0.1)
        http_daemon.signal(signal.SIGTERM)
        wait_for(lambda: fetch(http_daemon, "/readyz")[0] == 503, what="/readyz 503")
        assert fetch(http_daemon, "/readyz")[2] == "not ready: draining\n"
        assert fetch(http_daemon, "/healthz")[0] == 200
    finally:
        redis.resume()
    c.recv()
    c.close()
    assert http_daemon.proc.wait(10) == 0


def test_other_paths_and_methods(http_daemon):
    assert fetch(http_daemon, "/")[0] == 404
    assert fetch(http_daemon, "/metrics/x")[0] == 404
    assert fetch(http_daemon, "/metrics", method="POST")[0] == 405
    assert fetch(http_daemon, "/metrics", method="DELETE")[0] == 405
    assert fetch(http_daemon, "/healthz")[0] == 200


def test_http_is_off_by_default(daemon):
    assert "metrics.http" not in daemon.log_text()


def test_ipv6_loopback(make_daemon):
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback")
    d = make_daemon(top_extra='metrics = { http = true, http_address = "[::1]:0" },')
    port = int(re.search(r"on \[::1\]:(\d+)", d.wait_log("metrics.http: serving")).group(1))
    with urllib.request.urlopen("http://[::1]:%d/healthz" % port, timeout=10) as r:
        assert r.status == 200


def test_a_taken_port_fails_the_start(make_daemon, workdir):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        d = make_daemon(start=False,
                        top_extra='metrics = { http = true, http_address = "127.0.0.1:%d" },' % port)
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1:exitcode=23")
        proc = subprocess.run([harness.HOLDFASTD, "--config", d.config], capture_output=True,
                              text=True, timeout=30, env=env)
    assert "Sanitizer" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, proc.stderr
    assert "metrics.http: cannot listen on 127.0.0.1:%d" % port in proc.stderr
    assert "start-up failed" in proc.stderr


# ---- what the exposition holds ----

def test_no_series_that_can_never_move(http_daemon):
    text = fetch(http_daemon, "/metrics")[2]
    check_exposition(text)
    s = samples(text)
    requests = {k: v for k, v in s.items() if k.startswith("holdfast_requests_total{")}
    for series, value in requests.items():
        op = re.search(r'op="([^"]+)"', series).group(1)
        # Zeros are exported for resource ops only; probes appear once used.
        assert value > 0 or op in RESOURCE_OPS, series
    for impossible in [("hold", "IDEMPOTENCY_MISMATCH"), ("hold", "NOT_HELD"),
                       ("hold", "UNIMPLEMENTED"), ("status", "HELD_BY_ANOTHER"),
                       ("status", "CONFIRMED"), ("release", "PERMISSION_DENIED"),
                       ("cancel", "STALE"), ("extend", "CONFLICT"),
                       ("confirm", "HELD_BY_ANOTHER")]:
        assert 'holdfast_requests_total{op="%s",result="%s"}' % impossible not in s, impossible
    for possible in [("hold", "HELD_BY_ANOTHER"), ("hold", "PERMISSION_DENIED"),
                     ("confirm", "IDEMPOTENCY_MISMATCH"), ("confirm", "HOLD_LOST"),
                     ("cancel", "IDEMPOTENCY_MISMATCH"), ("extend", "NOT_HELD"),
                     ("release", "CONFIRMED"), ("status", "NOT_FOUND"),
                     ("status", "DEADLINE_EXCEEDED")]:
        assert s['holdfast_requests_total{op="%s",result="%s"}' % possible] == 0, possible
    # Only the ops that can answer degraded have the degraded series.
    degraded = {re.search(r'op="([^"]+)"', k).group(1)
                for k in s if k.startswith("holdfast_degraded_requests_total{")}
    assert degraded == {"hold", "extend", "release"}


def test_refusals_count_under_listed_codes(make_daemon):
    """The request layer's refusals are in every row's codes, an unknown
    namespace (NOT_FOUND) in every resource op's: counting them logs nothing
    (a code outside its row would be logged as the row's mistake)."""
    d = make_daemon()
    with Client(d.socket) as c:
        assert code_name(c.hold("nope", "p", ["1"]).code) == "NOT_FOUND"
        assert code_name(c.status("seat", "p", ["bad id"]).code) == "INVALID_ARGUMENT"
        text = c.metrics()
    s = samples(text)
    assert s['holdfast_requests_total{op="hold",result="NOT_FOUND"}'] == 1
    assert s['holdfast_requests_total{op="status",result="INVALID_ARGUMENT"}'] == 1
    assert "does not list" not in d.log_text()


def test_build_info_and_process_metrics(http_daemon):
    version, library = holdfastd_version()
    text = fetch(http_daemon, "/metrics")[2]
    types = check_exposition(text)
    s = samples(text)
    assert s['holdfast_build_info{version="%s",library="%s"}' % (version, library)] == 1
    assert types["holdfast_build_info"] == "gauge"
    now = time.time()
    assert now - 300 < s["process_start_time_seconds"] <= now + 1
    assert s["process_resident_memory_bytes"] > 1 << 20
    assert s["process_virtual_memory_bytes"] >= s["process_resident_memory_bytes"]
    assert s["process_open_fds"] >= 5  # stdio, the listeners, Redis, epoll
    assert s["process_max_fds"] >= s["process_open_fds"]
    assert s["process_cpu_seconds_total"] >= 0
    assert types["process_cpu_seconds_total"] == "counter"
    # The start time does not move between scrapes.
    assert samples(fetch(http_daemon, "/metrics")[2])["process_start_time_seconds"] == \
        s["process_start_time_seconds"]


# ---- logs ----

def test_journald_priorities(make_daemon, redis, monkeypatch):
    d = make_daemon(start=False)
    open(d.log_path, "ab").close()
    st = os.stat(d.log_path)
    monkeypatch.setenv("JOURNAL_STREAM", "%d:%d" % (st.st_dev, st.st_ino))
    d.start()
    redis.stop()  # a warning
    d.wait_log("not ready: redis down")
    redis.start()
    d.wait_ready()
    with Client(d.socket) as c:
        c.hold("seat", "j", ["1"], ttl_ms=1000)
    text = d.wait_log("op=hold")
    lines = text.splitlines()
    assert lines and all(re.match(r"<[3467]>\d{4}-\d\d-\d\dT", line) for line in lines), text
    assert any(line.startswith("<4>") and "not ready: redis down" in line for line in lines)
    assert any(line.startswith("<6>") and "op=hold" in line for line in lines)


def test_a_refused_config_is_an_error_in_the_journal(workdir):
    bad = os.path.join(workdir, "bad.lua")
    with open(bad, "w") as f:
        f.write("return { namespaces = { a = {} }, extra = 1 }\n")
    err_path = os.path.join(workdir, "stderr")
    for journal in (True, False):
        with open(err_path, "wb") as err:
            st = os.fstat(err.fileno())
            env = dict(os.environ, JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino))
            if not journal:
                env.pop("JOURNAL_STREAM")
            r = subprocess.run([harness.HOLDFASTD, "--check-config", bad], stderr=err,
                               stdout=subprocess.DEVNULL, env=env, timeout=30)
        assert r.returncode == 1
        text = open(err_path).read()
        prefix = "<3>" if journal else ""
        assert text.startswith(prefix + "holdfastd: " + bad + ":1: key 'extra'"), text


def test_plain_lines_without_the_journal(make_daemon, monkeypatch):
    # JOURNAL_STREAM names some other stream (stderr redirected under systemd).
    monkeypatch.setenv("JOURNAL_STREAM", "1:1")
    d = make_daemon()
    lines = d.log_text().splitlines()
    assert lines and all(re.match(r"\d{4}-\d\d-\d\dT", line) for line in lines)


def _probe_everything(d):
    with Client(d.socket) as c:
        c.health()
        c.metrics()
        fetch(d, "/metrics")
        fetch(d, "/healthz")
        fetch(d, "/readyz")
        c.hold("seat", "probes", [str(time.monotonic_ns())], ttl_ms=1000)


def test_probes_are_not_logged_by_default(make_daemon):
    d = make_daemon(top_extra=HTTP_ANY_PORT)
    _probe_everything(d)
    text = d.wait_log("op=hold")
    for word in ("op=health", "op=metrics", "http path="):
        assert word not in text, word

    # log.probes = true, by reload.
    cfg = open(d.config).read()
    d.write_config(text=cfg.replace('log = { level = "info" }',
                                    'log = { level = "info", probes = true }'))
    d.signal(signal.SIGHUP)
    d.wait_log("configuration reloaded")
    _probe_everything(d)
    text = d.wait_log("http path=/readyz")  # the last probe
    assert re.search(r" info  req cid=\S+ op=health ", text)
    assert re.search(r" info  req cid=\S+ op=metrics ", text)
    assert re.search(r" info  http path=/metrics method=GET status=200 peer=127\.0\.0\.1 ", text)
    assert " info  http path=/healthz method=GET status=200" in text


def test_probes_logged_at_debug(make_daemon):
    d = make_daemon(start=False, top_extra=HTTP_ANY_PORT)
    cfg = open(d.config).read()
    d.write_config(text=cfg.replace('log = { level = "info" }', 'log = { level = "debug" }'))
    d.start()
    _probe_everything(d)
    text = d.wait_log("op=hold")  # the last one
    assert re.search(r" debug req cid=\S+ op=health ", text)
    assert " debug http path=/metrics method=GET status=200" in text
    assert re.search(r" info  req cid=\S+ op=hold ", text)


def test_request_lines_can_be_limited_to_errors_or_sampled(make_daemon):
    """log.requests and log.requests_sample: the access-log switches. Errors
    are always logged; OK answers every time, 1 in N, or never."""
    d = make_daemon()
    cfg = open(d.config).read()

    def reload(setting):
        before = d.log_text().count("configuration reloaded")
        d.write_config(text=cfg.replace('log = { level = "info" }',
                                        'log = { level = "info", %s }' % setting))
        d.signal(signal.SIGHUP)
        wait_for(lambda: d.log_text().count("configuration reloaded") > before,
                 what="the reload")

    def lines(part):
        return len(re.findall(r" req cid=\S+ op=hold ns=seat partition=%s " % part,
                              d.log_text()))

    reload('requests = "errors"')
    with Client(d.socket) as c:
        assert code_name(c.hold("seat", "err", ["A"], ttl_ms=60000).code) == "OK"
        assert code_name(c.hold("seat", "err", ["A"], ttl_ms=60000).code) == "HELD_BY_ANOTHER"
    d.wait_log("partition=err ids=A result=HELD_BY_ANOTHER")
    assert lines("err") == 1

    reload("requests_sample = 3")
    with Client(d.socket) as c:
        for i in range(9):
            assert code_name(c.hold("seat", "smp", ["S%d" % i], ttl_ms=60000).code) == "OK"
        assert code_name(c.hold("seat", "smp", ["S0"], ttl_ms=60000).code) == "HELD_BY_ANOTHER"
    d.wait_log("partition=smp ids=S0 result=HELD_BY_ANOTHER")
    assert lines("smp") == 3 + 1

    reload('requests = "off"')
    with Client(d.socket) as c:
        assert code_name(c.hold("seat", "off", ["A"], ttl_ms=60000).code) == "OK"
        assert code_name(c.hold("seat", "off", ["A"], ttl_ms=60000).code) == "HELD_BY_ANOTHER"
    # Lines are written in order: once a later one is there, none is missing.
    reload('requests = "all"')
    with Client(d.socket) as c:
        c.hold("seat", "marker", ["M"], ttl_ms=60000)
    d.wait_log("partition=marker ids=M result=OK")
    assert lines("off") == 0
