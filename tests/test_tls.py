"""TLS to Redis (redis.tls*) and to PostgreSQL (the DSN's sslmode=verify-full).

The certificates are made here with the openssl tool: a CA, a server
certificate for localhost/127.0.0.1 signed by it, one for another name signed
by it too, a client certificate, and a second CA that signed none of them.
Debian's redis-server serves TLS on its tls-port (plain TCP off); the test
PostgreSQL cluster listens on 127.0.0.1 with ssl=on."""
import os
import subprocess
import time

import pytest

import cluster_harness
import harness
import pgharness as pgh
from harness import Client, Daemon, RedisServer, code_name, wait_for

HOLD_NS = 'seat = { default_ttl_ms = 30000, confirmable = true },'


class Certs:
    """PEM files under `dir`: ca, wrong_ca, server (localhost, 127.0.0.1),
    wrong_name (wrong.example), client; each name has .crt and .key."""

    def __init__(self, dir):
        self.dir = dir
        os.makedirs(dir, exist_ok=True)
        self._ca("ca", "holdfast test CA")
        self._ca("wrong_ca", "some other CA")
        # Cluster nodes present theirs as clients on the cluster bus, too.
        self._leaf("server", "localhost", "DNS:localhost,IP:127.0.0.1", "serverAuth, clientAuth")
        self._leaf("wrong_name", "wrong.example", "DNS:wrong.example", "serverAuth")
        self._leaf("client", "holdfastd", "DNS:holdfastd", "clientAuth")

    def crt(self, name):
        return os.path.join(self.dir, name + ".crt")

    def key(self, name):
        return os.path.join(self.dir, name + ".key")

    def _openssl(self, *args):
        subprocess.run(["openssl"] + list(args), check=True, capture_output=True, timeout=60)

    def _ext(self, name, lines):
        path = os.path.join(self.dir, name + ".ext")
        with open(path, "w") as f:
            f.write("[v3]\n" + "\n".join(lines) + "\n")
        return path

    def _newkey(self, name):
        self._openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                      "-out", self.key(name))

    def _ca(self, name, cn):
        self._newkey(name)
        csr = os.path.join(self.dir, name + ".csr")
        self._openssl("req", "-new", "-key", self.key(name), "-subj", "/CN=" + cn, "-out", csr)
        ext = self._ext(name, ["basicConstraints = critical, CA:TRUE",
                               "keyUsage = critical, keyCertSign, cRLSign",
                               "subjectKeyIdentifier = hash"])
        self._openssl("x509", "-req", "-in", csr, "-signkey", self.key(name), "-days", "2",
                      "-extfile", ext, "-extensions", "v3", "-out", self.crt(name))

    def _leaf(self, name, cn, san, usage):
        self._newkey(name)
        csr = os.path.join(self.dir, name + ".csr")
        self._openssl("req", "-new", "-key", self.key(name), "-subj", "/CN=" + cn, "-out", csr)
        ext = self._ext(name, ["basicConstraints = CA:FALSE",
                               "keyUsage = critical, digitalSignature",
                               "extendedKeyUsage = " + usage,
                               "subjectAltName = " + san,
                               "authorityKeyIdentifier = keyid"])
        self._openssl("x509", "-req", "-in", csr, "-CA", self.crt("ca"), "-CAkey",
                      self.key("ca"), "-CAcreateserial", "-days", "2", "-extfile", ext,
                      "-extensions", "v3", "-out", self.crt(name))


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return Certs(str(tmp_path_factory.mktemp("certs")))


def tls_redis(workdir, certs, cert="server", auth_clients=False, name="redis"):
    return RedisServer(workdir, name=name, tls={
        "cert": certs.crt(cert), "key": certs.key(cert), "ca": certs.crt("ca"),
        "auth_clients": auth_clients}).start()


@pytest.fixture
def servers(workdir):
    """Stops whatever a test started, daemons first, at its end."""
    started = []
    yield started
    for s in reversed(started):
        s.stop()


def start_daemon(servers, workdir, address, redis_extra, wait_ready=True, name="holdfastd",
                 **kw):
    d = Daemon(workdir, address, namespaces=HOLD_NS, redis_extra=redis_extra, name=name, **kw)
    servers.append(d)
    return d.start(wait_ready=wait_ready)


def lua_tls(ca_file, extra=""):
    # The handshake is bounded by the set-up calls' deadline: room for
    # valgrind (the harness's 500 ms is overridden, the last key wins).
    return 'tls = true, tls_ca_file = "%s", connect_timeout_ms = 3000, %s' % (ca_file, extra)


def hold_and_release(daemon, partition):
    with Client(daemon.socket) as c:
        r = c.hold("seat", partition, ["A1", "A2"], ttl_ms=60000)
        assert code_name(r.code) == "OK", r.message
        r = c.release("seat", partition, ["A1", "A2"], r.hold.token)
        assert code_name(r.code) == "OK", r.message


def stays_not_ready(daemon, seconds=1.5):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        with Client(daemon.socket) as c:
            h = c.health().health
            assert not h.ready and h.redis == "down"
        time.sleep(0.1)


# ---- Redis ----

def test_holds_over_tls(workdir, certs, servers):
    redis = tls_redis(workdir, certs)
    servers.append(redis)
    d = start_daemon(servers, workdir, redis.address, lua_tls(certs.crt("ca")))
    hold_and_release(d, "tls-1")
    # The hold went through the TLS port: the plain one is off, and Redis
    # counts the daemon's TLS connections (pool_size = 2) among its clients.
    assert redis.cmd("CONFIG", "GET", "port")[1] == "0"
    clients = redis.cmd("CLIENT", "LIST")
    assert clients.count("laddr=127.0.0.1:%d" % redis.tls_port) >= 2, clients
    log = d.log_text()
    assert "redis: connection 0 ready (%s)" % redis.address in log
    assert "TLS handshake" not in log


def test_server_name_checked_instead_of_the_address(workdir, certs, servers):
    """tls_server_name: the certificate must carry that name (the address is
    an IP address the certificate also carries, so this shows the name is
    what is checked: a name it lacks is refused)."""
    redis = tls_redis(workdir, certs)
    servers.append(redis)
    d = start_daemon(servers, workdir, redis.address,
                     lua_tls(certs.crt("ca"), 'tls_server_name = "localhost",'))
    hold_and_release(d, "tls-sni")
    bad = start_daemon(servers, workdir, redis.address,
                       lua_tls(certs.crt("ca"), 'tls_server_name = "other.example",'),
                       wait_ready=False, name="badname")
    bad.wait_log("TLS handshake with %s failed" % redis.address, timeout=15)
    assert "hostname mismatch" in bad.log_text()
    stays_not_ready(bad, 0.5)


def test_wrong_ca_is_refused_and_logged_once(workdir, certs, servers):
    redis = tls_redis(workdir, certs)
    servers.append(redis)
    d = start_daemon(servers, workdir, redis.address, lua_tls(certs.crt("wrong_ca")),
                     wait_ready=False)
    d.wait_log("TLS handshake with %s failed on connection" % redis.address, timeout=15)
    stays_not_ready(d, 2.0)  # with backoff, several attempts on each connection
    log = d.log_text()
    # Redis sends its CA along with its certificate (OpenSSL builds the
    # chain from its own CA file), so the chain ends in a CA we do not trust.
    assert ("server certificate refused: self-signed certificate in certificate chain" in log
            or "server certificate refused: unable to get local issuer certificate" in log), log
    assert log.count("TLS handshake with") == 1, log
    with Client(d.socket) as c:
        r = c.hold("seat", "tls-2", ["A1"])
        assert code_name(r.code) == "UNAVAILABLE"


def test_wrong_name_is_refused(workdir, certs, servers):
    """A certificate from the right CA for another name: refused, whether
    the name checked is the address's IP or the host name asked for."""
    redis = tls_redis(workdir, certs, cert="wrong_name")
    servers.append(redis)
    by_ip = start_daemon(servers, workdir, redis.address, lua_tls(certs.crt("ca")),
                         wait_ready=False, name="by-ip")
    by_name = start_daemon(servers, workdir, "localhost:%d" % redis.tls_port,
                           lua_tls(certs.crt("ca")), wait_ready=False, name="by-name")
    by_ip.wait_log("server certificate refused: IP address mismatch", timeout=15)
    by_name.wait_log("server certificate refused: hostname mismatch", timeout=15)
    stays_not_ready(by_ip, 0.5)
    stays_not_ready(by_name, 0.5)


def test_verify_off_encrypts_without_checking(workdir, certs, servers):
    redis = tls_redis(workdir, certs, cert="wrong_name")
    servers.append(redis)
    d = start_daemon(servers, workdir, redis.address,
                     lua_tls(certs.crt("wrong_ca"), "tls_verify = false,"))
    hold_and_release(d, "tls-noverify")
    assert "TLS without verification" in d.log_text()


def test_client_certificate(workdir, certs, servers):
    """A server that asks for client certificates (tls-auth-clients yes)
    takes the daemon's and refuses a daemon without one."""
    redis = tls_redis(workdir, certs, auth_clients=True)
    servers.append(redis)
    d = start_daemon(servers, workdir, redis.address, lua_tls(
        certs.crt("ca"), 'tls_cert_file = "%s", tls_key_file = "%s",'
        % (certs.crt("client"), certs.key("client"))))
    hold_and_release(d, "tls-client")
    without = start_daemon(servers, workdir, redis.address, lua_tls(certs.crt("ca")),
                           wait_ready=False, name="nocert")
    stays_not_ready(without, 1.0)
    assert "ready (" not in without.log_text()


def ready(daemon):
    with Client(daemon.socket) as c:
        return c.health().health.ready


def test_reconnects_after_redis_restart(workdir, certs, servers):
    redis = tls_redis(workdir, certs)
    servers.append(redis)
    d = start_daemon(servers, workdir, redis.address, lua_tls(certs.crt("ca")))
    hold_and_release(d, "tls-3")
    redis.stop()
    wait_for(lambda: not ready(d), what="not ready")
    before = d.log_text().count("redis: connection 0 ready")
    redis.start()
    d.wait_ready()
    hold_and_release(d, "tls-3")
    log = d.log_text()
    assert log.count("redis: connection 0 ready") == before + 1, log
    # A reconnect can meet the old server as it exits (a handshake cut
    # short), never a certificate it refuses.
    assert "server certificate refused" not in log, log


def test_unusable_tls_files_stop_the_start(workdir, certs):
    """A CA file that cannot be read, or a key that is not the certificate's:
    holdfastd exits at start naming the setting."""
    cases = [
        (lua_tls(os.path.join(workdir, "missing.pem")), "redis.tls_ca_file"),
        (lua_tls(certs.crt("ca"), 'tls_cert_file = "%s", tls_key_file = "%s",'
                 % (certs.crt("client"), certs.key("server"))), "redis.tls_key_file"),
    ]
    wrapper = os.environ.get("HOLDFASTD_WRAPPER", "").split()
    for i, (extra, setting) in enumerate(cases):
        d = Daemon(workdir, "127.0.0.1:1", namespaces=HOLD_NS, redis_extra=extra,
                   name="bad%d" % i)
        r = subprocess.run(wrapper + [harness.HOLDFASTD, "--config", d.config],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 1, r.stdout + r.stderr
        out = r.stdout + r.stderr
        assert "redis TLS: " + setting in out and "start-up failed" in out, out


def test_cluster_over_tls(workdir, certs, servers):
    """Every node of a Redis Cluster over TLS (tls-cluster yes: the nodes
    announce their TLS ports), each checked by the IP address it announces."""
    nodes = []
    for i, port in enumerate(cluster_harness.free_ports(3)):
        node = RedisServer(workdir, name="node%d" % i, tls={
            "cert": certs.crt("server"), "key": certs.key("server"), "ca": certs.crt("ca")},
            extra_args=["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                        "--tls-cluster", "yes", "--cluster-node-timeout", "5000"])
        node.tls_port = port
        servers.append(node.start())
        nodes.append(node)
    out = subprocess.run([cluster_harness.REDIS_CLI, "--tls", "--cacert", certs.crt("ca"),
                          "--cluster", "create"] + [n.address for n in nodes] +
                         ["--cluster-replicas", "0", "--cluster-yes"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    wait_for(lambda: all("cluster_state:ok" in n.cmd("CLUSTER", "INFO") for n in nodes),
             timeout=20, interval=0.1, what="cluster_state:ok")
    d = start_daemon(servers, workdir, nodes[0].address,
                     lua_tls(certs.crt("ca"), "cluster = true,"))
    # A partition on each node: the ports the cluster announces are the TLS ones.
    slots = nodes[0].cmd("CLUSTER", "SLOTS")
    assert sorted(int(r[2][1]) for r in slots) == sorted(n.tls_port for n in nodes)
    used = set()
    for n in range(200):
        part = "tls-c%d" % n
        slot = cluster_harness.keyslot(cluster_harness.hold_key("seat", part, "A1"))
        port = next(int(r[2][1]) for r in slots if r[0] <= slot <= r[1])
        if port not in used:
            used.add(port)
            hold_and_release(d, part)
    assert len(used) == 3
    log = d.log_text()
    for node in nodes:
        assert "redis: connection 0 ready (%s)" % node.address in log, log


# ---- PostgreSQL ----

@pytest.fixture(scope="module")
def tls_pg(certs):
    """A PostgreSQL cluster of its own, with ssl=on on 127.0.0.1, and a
    database set up the production way (roles, then --migrate)."""
    c = pgh.PgCluster(ssl={"cert": certs.crt("server"), "key": certs.key("server")}).start()
    try:
        c.admin("CREATE DATABASE hf")
        r = c.psql_file("hf", pgh.ROLES_SQL)
        assert r.returncode == 0, r.stderr
        r = c.migrate("hf")
        assert r.returncode == 0, r.stdout + r.stderr
        yield c
    finally:
        c.destroy()


def pg_section(dsn):
    # A generous connect timeout: under valgrind a handshake is slow, and a
    # timeout would hide the certificate error the tests look for.
    return 'postgres = { dsn = "%s", pool_size = 2, connect_timeout_ms = 5000 },' % dsn


def test_postgres_verify_full(workdir, certs, redis, tls_pg, servers):
    dsn = tls_pg.tls_dsn("hf", certs.crt("ca"))
    d = start_daemon(servers, workdir, redis.address, "", top_extra=pg_section(dsn))
    with Client(d.socket) as c:
        r = c.hold("seat", "tls-pg", ["B1"], ttl_ms=60000)
        assert code_name(r.code) == "OK", r.message
        r = pgh.confirm(c, "seat", "tls-pg", ["B1"], r.hold.token, "tls-key-1")
        assert code_name(r.code) == "OK", r.message
    assert tls_pg.admin("SELECT count(*) FROM holdfast.claims WHERE partition = 'tls-pg'",
                        "hf") == [("1",)]
    # Every one of the daemon's sessions is encrypted.
    rows = tls_pg.admin("SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)"
                        " WHERE a.application_name = 'holdfastd'")
    assert rows and all(r == ("t",) for r in rows), rows


def test_postgres_wrong_ca(workdir, certs, redis, tls_pg, servers):
    dsn = tls_pg.tls_dsn("hf", certs.crt("wrong_ca"))
    d = start_daemon(servers, workdir, redis.address, "", top_extra=pg_section(dsn),
                     wait_ready=False)
    d.wait_log("certificate verify failed", timeout=30)

    def health():
        with Client(d.socket) as c:
            return c.health().health
    wait_for(lambda: health().redis == "up", what="redis up")
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        h = health()
        assert not h.ready and h.postgres == "down", h
        time.sleep(0.1)
    log = d.log_text()
    assert log.count("certificate verify failed") == 1, log  # once per outage


def test_redis_tls_unharmed_by_postgres_tls_failures(workdir, certs, tls_pg, servers):
    """Both over TLS in one thread: PostgreSQL refusing its certificate again
    and again (libpq may leave OpenSSL errors queued) never costs a Redis TLS
    connection, and holds go on being granted."""
    redis = tls_redis(workdir, certs)
    servers.append(redis)
    dsn = tls_pg.tls_dsn("hf", certs.crt("wrong_ca"))
    d = start_daemon(servers, workdir, redis.address, lua_tls(certs.crt("ca")),
                     top_extra=pg_section(dsn), wait_ready=False)
    d.wait_log("certificate verify failed", timeout=30)
    wait_for(lambda: "redis: connection 1 ready" in d.log_text(), what="redis up")
    end = time.monotonic() + 3.0  # PostgreSQL is retried with backoff all along
    with Client(d.socket) as c:
        n = 0
        while time.monotonic() < end:
            r = c.hold("seat", "tls-both", ["C%d" % n], ttl_ms=1000)
            assert code_name(r.code) == "OK", r.message
            n += 1
            time.sleep(0.01)
    log = d.log_text()
    assert "redis: connection" not in log.replace("redis: connection 0 ready", "").replace(
        "redis: connection 1 ready", ""), log
