"""Test harness: real redis-server and holdfastd processes in a temp dir, and a
small framing client. Used by the integration tests under tests/.

Environment:
  HOLDFASTD     path of the daemon binary (default build/daemon/holdfastd)
  HOLDFASTCTL   path of holdfastctl (default next to HOLDFASTD)
  REDIS_SERVER  redis-server binary (default: from PATH)
  HOLDFASTD_WRAPPER  a command to run the daemon under, e.g. "valgrind -q
                --error-exitcode=99 --leak-check=full"
"""
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOLDFASTD = os.path.abspath(os.environ.get("HOLDFASTD", os.path.join(ROOT, "build/daemon/holdfastd")))
HOLDFASTCTL = os.path.abspath(
    os.environ.get("HOLDFASTCTL", os.path.join(os.path.dirname(HOLDFASTD), "holdfastctl")))
REDIS_SERVER = os.environ.get("REDIS_SERVER", shutil.which("redis-server") or "/usr/bin/redis-server")

_pb2 = None


def pb():
    """holdfast_pb2, generated from protos/ with protoc into a temp dir once."""
    global _pb2
    if _pb2 is None:
        out = tempfile.mkdtemp(prefix="hf-pb-")
        subprocess.run(["protoc", "-I", os.path.join(ROOT, "protos"), "--python_out", out,
                        "holdfast/v1/holdfast.proto"], check=True)
        sys.path.insert(0, out)
        from holdfast.v1 import holdfast_pb2  # noqa: E402
        _pb2 = holdfast_pb2
    return _pb2


def code_name(code):
    return pb().Code.Name(code).replace("CODE_", "")


# Every token a test was handed; the daemon's log is checked against them.
ISSUED_TOKENS = set()

# One pass over a log for every token (a flood writes tens of MB of log and
# a run issues tens of thousands of tokens: searching each token would take
# minutes): the log's token-shaped words and base64url runs, against sets.
_TOKEN_WORD = re.compile(r"[0-9]{1,20}\.[A-Za-z0-9_-]{22}(?![A-Za-z0-9_-])")
_B64_RUN = re.compile(r"[A-Za-z0-9_-]{22,}")


def tokens_in(text, tokens):
    """The tokens of `tokens` that appear whole in text."""
    return {m.group(0) for m in _TOKEN_WORD.finditer(text)} & set(tokens)


def randomness_in(text, tokens):
    """True when the random half (22 base64url characters) of any of
    `tokens` appears anywhere in text, even inside a longer run."""
    halves = {t.split(".", 1)[1] for t in tokens}
    for m in _B64_RUN.finditer(text):
        run = m.group(0)
        for i in range(len(run) - 21):
            if run[i:i + 22] in halves:
                return True
    return False


def wait_for(predicate, timeout=10.0, interval=0.02, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("timed out waiting for " + what)


def free_tcp_port():
    """A port on 127.0.0.1 that nothing listens on just now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A private redis-server on a Unix socket (no TCP, no persistence).

    tls: optional {"cert": path, "key": path, "ca": path, "auth_clients": bool}
    to serve TLS on 127.0.0.1:tls_port as well (plain TCP stays off; the Unix
    socket, which Redis never serves TLS on, stays for the tests' own cmd());
    `address` is then the TLS one, kept across restarts."""

    def __init__(self, workdir, name="redis", extra_args=(), tls=None):
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.socket = os.path.join(self.dir, "redis.sock")
        self.port = 0
        self.extra_args = list(extra_args)
        self.tls = tls
        self.tls_port = free_tcp_port() if tls else 0
        self.proc = None

    @property
    def address(self):
        if self.tls:
            return "127.0.0.1:%d" % self.tls_port
        return "unix:" + self.socket

    def _tls_args(self):
        if not self.tls:
            return []
        return ["--tls-port", str(self.tls_port), "--bind", "127.0.0.1",
                "--tls-cert-file", self.tls["cert"], "--tls-key-file", self.tls["key"],
                "--tls-ca-cert-file", self.tls["ca"],
                "--tls-auth-clients", "yes" if self.tls.get("auth_clients") else "no"]

    def start(self):
        args = [REDIS_SERVER, "--port", str(self.port), "--unixsocket", self.socket,
                "--unixsocketperm", "700", "--dir", self.dir, "--save", "",
                "--appendonly", "no", "--logfile", os.path.join(self.dir, "redis.log"),
                "--daemonize", "no"] + self._tls_args() + self.extra_args
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: self._ping(), what="redis-server to answer PING")
        return self

    def _ping(self):
        try:
            return self.cmd("PING") == "PONG"
        except OSError:
            return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None

    def restart(self):
        self.stop()
        return self.start()

    def pause(self):
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    def cmd(self, *args, timeout=5.0):
        """One command over a fresh connection; returns the decoded reply."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(timeout)
            s.connect(self.socket)
            s.sendall(encode_resp_command(args))
            return RespReader(s).read()


def encode_resp_command(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class RespError(Exception):
    pass


class RespReader:
    """Blocking RESP2 reader over a socket (also used by the DELEX double)."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self, raw=False):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            err = RespError(rest.decode())
            if raw:
                return err
            raise err
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n).decode("utf-8", "replace")
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read(raw=True) for _ in range(n)]
        raise ValueError("bad RESP line %r" % line)


DEFAULT_NAMESPACES = """
    seat = { default_ttl_ms = 30000, min_ttl_ms = 10, max_ttl_ms = 600000,
             confirmable = true },
    ["product-modify"] = { default_ttl_ms = 5000, on_redis_down = "best_effort" },
"""


class Daemon:
    """holdfastd with a generated config, its log in the work dir."""

    def __init__(self, workdir, redis_address, namespaces=DEFAULT_NAMESPACES, redis_extra="",
                 limits="", socket_extra="", top_extra="", name="holdfastd"):
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.socket = os.path.join(self.dir, "holdfast.sock")
        self.config = os.path.join(self.dir, "holdfast.lua")
        self.log_path = os.path.join(self.dir, "holdfastd.log")
        self.redis_address = redis_address
        self.proc = None
        self.write_config(namespaces, redis_extra, limits, socket_extra, top_extra)

    def write_config(self, namespaces=DEFAULT_NAMESPACES, redis_extra="", limits="",
                     socket_extra="", top_extra="", text=None):
        if text is None:
            text = """-- generated by tests/harness.py
return {
  socket = { path = %r, mode = "0600", %s },
  redis = { address = %r, pool_size = 2, connect_timeout_ms = 500,
            command_timeout_ms = 1000, %s },
  limits = { default_timeout_ms = 2000, drain_timeout_ms = 3000, %s },
  log = { level = "info" },
  namespaces = { %s },
  %s
}
""" % (self.socket, socket_extra, self.redis_address, redis_extra, limits, namespaces, top_extra)
            text = text.replace("'", '"')
        with open(self.config, "w") as f:
            f.write(text)

    def start(self, wait_ready=True):
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=23")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1:exitcode=24")
        self.log = open(self.log_path, "ab")
        wrapper = os.environ.get("HOLDFASTD_WRAPPER", "").split()
        self.proc = subprocess.Popen(wrapper + [HOLDFASTD, "--config", self.config], stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env)
        wait_for(lambda: self._accepting() or self.proc.poll() is not None,
                 what="the daemon's socket")
        assert self.proc.poll() is None, "holdfastd exited at start:\n" + self.log_text()
        if wait_ready:
            self.wait_ready()
        return self

    def _accepting(self):
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(self.socket)
            return True
        except OSError:
            return False

    def wait_ready(self, timeout=10.0):
        def ready():
            try:
                with Client(self.socket) as c:
                    return c.health().health.ready
            except OSError:
                return False
        wait_for(ready, timeout=timeout, what="holdfastd to be ready")

    def wait_log(self, text, timeout=5.0):
        """The daemon writes its log once per loop iteration: a line may land
        just after the answer it belongs to."""
        wait_for(lambda: text in self.log_text(), timeout=timeout, what="%r in the log" % text)
        return self.log_text()

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=15.0):
        """SIGTERM, wait, and check the exit and the log: sanitizer reports
        and leaked tokens fail the test that owns this daemon."""
        if not self.proc:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("holdfastd did not stop within %.0fs after SIGTERM" % timeout)
        finally:
            self.log.close()
            self.proc = None
        self.check_log()
        assert rc == 0, "holdfastd exited %d:\n%s" % (rc, self.log_text()[-4000:])
        return rc

    def check_log(self):
        text = self.log_text()
        for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:"):
            assert marker not in text, "sanitizer report in the daemon log:\n" + text[-6000:]
        leaked = tokens_in(text, ISSUED_TOKENS)
        assert not leaked, "%d issued tokens appear in the daemon log" % len(leaked)
        # Nor the random half alone.
        assert not randomness_in(text, ISSUED_TOKENS), "token randomness appears in the daemon log"

    def ctl(self, *args, input=None):
        return subprocess.run([HOLDFASTCTL, "--socket", self.socket] + list(args),
                              capture_output=True, text=True, input=input, timeout=30)


class Client:
    """Blocking framing client. send() and recv() can be used separately to
    keep many requests in flight on one connection."""

    def __init__(self, path, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.next_id = 1
        self.buf = b""

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, **fields):
        """Request(**fields) with a fresh id; returns the id."""
        req = pb().Request(**fields)
        if not req.id:
            req.id = self.next_id
            self.next_id += 1
        body = req.SerializeToString()
        self.sock.sendall(struct.pack(">I", len(body)) + body)
        return req.id

    def _exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("daemon closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def recv(self):
        (n,) = struct.unpack(">I", self._exact(4))
        resp = pb().Response()
        resp.ParseFromString(self._exact(n))
        if resp.HasField("hold") and resp.hold.token:
            ISSUED_TOKENS.add(resp.hold.token)
        return resp

    def call(self, **fields):
        rid = self.send(**fields)
        resp = self.recv()
        assert resp.id == rid, "response id %d for request %d" % (resp.id, rid)
        return resp

    # Convenience wrappers.
    def hold(self, ns, partition, ids, ttl_ms=0, **kw):
        return self.call(hold=pb().HoldRequest(namespace=ns, partition=partition, ids=ids,
                                               ttl_ms=ttl_ms), **kw)

    def extend(self, ns, partition, ids, token, ttl_ms=0, **kw):
        return self.call(extend=pb().ExtendRequest(namespace=ns, partition=partition, ids=ids,
                                                   token=token, ttl_ms=ttl_ms), **kw)

    def release(self, ns, partition, ids, token, **kw):
        return self.call(release=pb().ReleaseRequest(namespace=ns, partition=partition,
                                                     ids=ids, token=token), **kw)

    def status(self, ns, partition, ids, token="", **kw):
        return self.call(status=pb().StatusRequest(namespace=ns, partition=partition, ids=ids,
                                                   token=token), **kw)

    def health(self, **kw):
        return self.call(health=pb().HealthRequest(), **kw)

    def metrics(self, **kw):
        return self.call(metrics=pb().MetricsRequest(), **kw).metrics.text


def parse_metrics(text):
    """{'name{labels}': value} from Prometheus text."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^(\S+)\s+(\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out
