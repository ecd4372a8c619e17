"""PostgreSQL for the Confirm/Cancel integration tests.

One private cluster per test run (initdb + pg_ctl, Unix socket only, in a temp
dir; run as an unprivileged user when the suite runs as root, since
PostgreSQL refuses root), a template database set up the production way (the
least-privilege roles of daemon/sql/roles-example.sql, then `holdfastd
--migrate` as the owner role), and a fresh copy of that template per test.
The daemon connects as holdfast_app, which may only execute the API functions.

The tests' own sessions (row locks, assertions) use a minimal client of the
PostgreSQL wire protocol below (simple queries, trust authentication), so the
suite needs no driver. Redis and holdfastd come from tests/harness.py.

Environment:
  PG_BIN      directory with initdb/pg_ctl/psql/pg_dump
              (default: the newest /usr/lib/postgresql/*/bin)
  HF_PG_USER  the user PostgreSQL runs as when the suite runs as root
              (default: nobody)
"""
import atexit
import glob
import itertools
import os
import pwd
import shutil
import socket
import struct
import subprocess
import tempfile
import threading

import harness
from harness import pb

SUPERUSER = "hf_admin"
OWNER = "holdfast_owner"
APP = "holdfast_app"
ROLES_SQL = os.path.join(harness.ROOT, "daemon", "sql", "roles-example.sql")

# Namespaces for the confirm tests: `seat` keeps a confirmed marker in Redis,
# `plain` releases the hold after a confirm (marker TTL 0), `nonconf` cannot
# be confirmed.
NAMESPACES = """
    seat = { default_ttl_ms = 30000, min_ttl_ms = 10, max_ttl_ms = 600000,
             confirmable = true, confirm_window_ms = 30000 },
    plain = { default_ttl_ms = 30000, min_ttl_ms = 10, max_ttl_ms = 600000,
              confirmable = true, confirm_window_ms = 30000, confirmed_marker_ttl_ms = 0 },
    nonconf = { default_ttl_ms = 30000 },
"""


def _pg_bin():
    env = os.environ.get("PG_BIN")
    if env:
        return env
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                    key=lambda p: int(p.split("/")[-2]), reverse=True):
        if os.path.exists(os.path.join(d, "initdb")):
            return d
    raise RuntimeError("PostgreSQL server binaries not found (tools/deps-confirm.sh installs them)")


class PgError(Exception):
    def __init__(self, fields):
        self.sqlstate = fields.get("C", "")
        self.message = fields.get("M", "")
        super().__init__("%s (SQLSTATE %s)" % (self.message, self.sqlstate))


class PgSession:
    """Simple-query protocol over the cluster's Unix socket, trust auth only.
    query() runs one string (which may hold several statements) and returns
    the rows of the last result as tuples of str/None."""

    def __init__(self, sockdir, port, dbname, user, timeout=60.0):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(timeout)
        self.sock.connect(os.path.join(sockdir, ".s.PGSQL.%d" % port))
        self.buf = b""
        params = b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in
                          (("user", user), ("database", dbname),
                           ("application_name", "hf-test")))
        body = struct.pack("!i", 196608) + params + b"\0"
        self.sock.sendall(struct.pack("!i", len(body) + 4) + body)
        self.pid = None
        error = None
        while True:
            kind, data = self._message()
            if kind == b"R" and struct.unpack("!i", data[:4])[0] != 0:
                raise RuntimeError("the test cluster must use trust authentication")
            if kind == b"K":
                self.pid = struct.unpack("!i", data[:4])[0]
            if kind == b"E":
                error = PgError(self._fields(data))
                break
            if kind == b"Z":
                break
        if error:
            self.sock.close()
            raise error

    def _exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("postgres closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def _message(self):
        kind = self._exact(1)
        (n,) = struct.unpack("!i", self._exact(4))
        return kind, self._exact(n - 4)

    @staticmethod
    def _fields(data):
        out = {}
        for part in data.split(b"\0"):
            if part:
                out[chr(part[0])] = part[1:].decode("utf-8", "replace")
        return out

    def query(self, sql):
        body = sql.encode() + b"\0"
        self.sock.sendall(b"Q" + struct.pack("!i", len(body) + 4) + body)
        rows, error = [], None
        while True:
            kind, data = self._message()
            if kind == b"T":
                rows = []
            elif kind == b"D":
                (ncols,) = struct.unpack("!h", data[:2])
                pos, row = 2, []
                for _ in range(ncols):
                    (n,) = struct.unpack("!i", data[pos:pos + 4])
                    pos += 4
                    if n < 0:
                        row.append(None)
                    else:
                        row.append(data[pos:pos + n].decode("utf-8", "replace"))
                        pos += n
                rows.append(tuple(row))
            elif kind == b"E":
                error = PgError(self._fields(data))
            elif kind == b"Z":
                break
        if error:
            raise error
        return rows

    def value(self, sql):
        rows = self.query(sql)
        return rows[0][0] if rows else None

    def close(self):
        try:
            self.sock.sendall(b"X\0\0\0\4")
        except OSError:
            pass
        self.sock.close()


def lit(s):
    """A SQL string literal (for the tests' own queries)."""
    return "'" + str(s).replace("'", "''") + "'"


class PgCluster:
    """ssl: optional {"cert": path, "key": path} (PEM, the server's): the
    cluster then also listens on 127.0.0.1:port with ssl=on (copies of the
    files, owned by the server's user, live in its directory)."""

    def __init__(self, ssl=None):
        self.bin = _pg_bin()
        self.dir = tempfile.mkdtemp(prefix="hf-pg-")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.log_path = os.path.join(self.dir, "postgres.log")
        self.ssl = ssl
        self.port = harness.free_tcp_port() if ssl else 5432
        self.prefix = []
        owner = None
        if os.geteuid() == 0:
            user = os.environ.get("HF_PG_USER", "nobody")
            pw = pwd.getpwnam(user)
            owner = (pw.pw_uid, pw.pw_gid)
            os.chown(self.dir, *owner)
            self.prefix = ["runuser", "-u", user, "--"]
        if ssl:
            # PostgreSQL refuses a key others may read.
            for kind in ("cert", "key"):
                path = os.path.join(self.dir, "server." + kind)
                shutil.copyfile(ssl[kind], path)
                os.chmod(path, 0o600)
                if owner:
                    os.chown(path, *owner)
        self._names = itertools.count(1)

    def _run(self, args, **kw):
        kw.setdefault("check", True)
        kw.setdefault("capture_output", True)
        kw.setdefault("timeout", 120)
        return subprocess.run(self.prefix + args, text=True, **kw)

    def tool(self, name):
        return os.path.join(self.bin, name)

    def start(self):
        if not os.path.exists(self.data):
            self._run([self.tool("initdb"), "-D", self.data, "-U", SUPERUSER, "--auth=trust",
                       "-E", "UTF8", "--locale=C", "--no-sync"])
        # log_statement=all with parameters: the token test greps this log.
        listen = "''"
        if self.ssl:
            listen = ("127.0.0.1 -c ssl=on -c ssl_cert_file=%s -c ssl_key_file=%s"
                      % (os.path.join(self.dir, "server.cert"),
                         os.path.join(self.dir, "server.key")))
        opts = ("-k %s -c listen_addresses=%s -p %d -c fsync=off -c full_page_writes=off"
                " -c log_statement=all -c log_line_prefix='%%m [%%p] %%a: '"
                " -c max_connections=200" % (self.dir, listen, self.port))
        self._run([self.tool("pg_ctl"), "-D", self.data, "-l", self.log_path, "-w", "-t", "60",
                   "-o", opts, "start"])
        return self

    def stop(self, mode="fast"):
        self._run([self.tool("pg_ctl"), "-D", self.data, "-m", mode, "-w", "-t", "60", "stop"],
                  check=False)

    def restart(self, mode="fast"):
        """Stop (fast: abort transactions, disconnect everyone) and start."""
        self._run([self.tool("pg_ctl"), "-D", self.data, "-m", mode, "-w", "-t", "60", "stop"])
        self.start()

    def destroy(self):
        self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)

    def dsn(self, dbname, user=APP):
        return "host=%s port=%d dbname=%s user=%s" % (self.dir, self.port, dbname, user)

    def tls_dsn(self, dbname, rootcert, user=APP, host="127.0.0.1"):
        """Over TCP with TLS, the server's certificate checked against
        `rootcert` and its name against `host` (clusters made with ssl)."""
        return ("host=%s port=%d dbname=%s user=%s sslmode=verify-full sslrootcert=%s"
                % (host, self.port, dbname, user, rootcert))

    def session(self, dbname="postgres", user=SUPERUSER):
        return PgSession(self.dir, self.port, dbname, user)

    def admin(self, sql, dbname="postgres"):
        s = self.session(dbname)
        try:
            return s.query(sql)
        finally:
            s.close()

    def psql_file(self, dbname, path, user=SUPERUSER):
        return subprocess.run([self.tool("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h",
                               self.dir, "-p", str(self.port), "-U", user, "-d", dbname,
                               "-f", path], capture_output=True, text=True, timeout=60)

    def migrate(self, dbname, user=OWNER):
        """`holdfastd --migrate` as `user`; the CompletedProcess."""
        return subprocess.run([harness.HOLDFASTD, "--migrate", "--dsn", self.dsn(dbname, user)],
                              capture_output=True, text=True, timeout=60)

    def new_database(self, template="hf_template"):
        name = "t%d" % next(self._names)
        self.admin("CREATE DATABASE %s TEMPLATE %s" % (name, template) if template
                   else "CREATE DATABASE %s" % name)
        return name

    def drop_database(self, name):
        self.admin("DROP DATABASE IF EXISTS %s WITH (FORCE)" % name)

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")


class _Relay:
    """One proxied connection: two pumps, the server-to-client one freezable."""

    def __init__(self, client, server):
        self.client, self.server = client, server
        self.frozen = False
        self.withheld = 0
        self.closed = False
        self.linger = False

    def start(self):
        for src, dst, freezable in ((self.client, self.server, False),
                                    (self.server, self.client, True)):
            threading.Thread(target=self._pump, args=(src, dst, freezable), daemon=True).start()

    def _pump(self, src, dst, freezable):
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                break
            if not data:
                break
            if freezable and self.frozen:
                self.withheld += len(data)  # read and never delivered
                continue
            try:
                dst.sendall(data)
            except OSError:
                break
        if self.linger and not freezable:
            return  # the client side ended; the server side stays open (PgProxy.linger)
        self.close()

    def close(self):
        if self.closed:
            return
        self.closed = True
        for s in (self.client, self.server):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


class PgProxy:
    """A Unix-socket relay in front of the cluster. freeze() makes the
    connections open now withhold everything the server sends; cut() then
    closes them. The daemon so loses a result it never saw (e.g. right after
    a COMMIT), while new connections work normally."""

    def __init__(self, c):
        self.cluster = c
        self.dir = tempfile.mkdtemp(prefix="hf-pgx-")
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(os.path.join(self.dir, ".s.PGSQL.%d" % c.port))
        self.listener.listen(64)
        self.relays = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX)
            try:
                server.connect(os.path.join(self.cluster.dir, ".s.PGSQL.%d" % self.cluster.port))
            except OSError:
                client.close()
                continue
            relay = _Relay(client, server)
            self.relays.append(relay)
            relay.start()

    def dsn(self, dbname, user=APP):
        return "host=%s port=%d dbname=%s user=%s" % (self.dir, self.cluster.port, dbname, user)

    def freeze(self):
        frozen = [r for r in self.relays if not r.closed]
        for r in frozen:
            r.frozen = True
        return frozen

    def withheld(self):
        return sum(r.withheld for r in self.relays if r.frozen)

    def linger(self):
        """The connections open now keep their server side open when their
        client side closes, like a client host that vanished without closing
        its connections: the server process is not told, and runs its
        statement on (committing, if it gets that far) until it next writes
        to the connection, which then closes."""
        held = [r for r in self.relays if not r.closed]
        for r in held:
            r.linger = True
        return held

    def cut(self):
        for r in self.relays:
            if r.frozen:
                r.close()

    def close(self):
        self.listener.close()
        for r in self.relays:
            r.close()
        shutil.rmtree(self.dir, ignore_errors=True)


_cluster = None


def cluster():
    """The run's cluster, started (and its template migrated) on first use."""
    global _cluster
    if _cluster is None:
        c = PgCluster().start()
        atexit.register(c.destroy)
        c.admin("CREATE DATABASE hf_template")
        r = c.psql_file("hf_template", ROLES_SQL)
        assert r.returncode == 0, "roles-example.sql failed:\n" + r.stderr
        r = c.migrate("hf_template")
        assert r.returncode == 0, "holdfastd --migrate failed:\n" + r.stdout + r.stderr
        _cluster = c
    return _cluster


class PgDatabase:
    """A fresh migrated database for one test."""

    def __init__(self, c, name):
        self.cluster = c
        self.name = name
        self._admin = None

    @property
    def admin(self):
        if self._admin is None:
            self._admin = self.cluster.session(self.name)
        return self._admin

    def query(self, sql):
        return self.admin.query(sql)

    def value(self, sql):
        return self.admin.value(sql)

    def session(self, user=SUPERUSER):
        return self.cluster.session(self.name, user)

    def claims(self, ns, partition):
        return self.query("SELECT resource, fence, reference, idempotency_key FROM holdfast.claims"
                          " WHERE ns = %s AND partition = %s ORDER BY resource"
                          % (lit(ns), lit(partition)))

    def idempotency(self, ns, key):
        return self.query("SELECT op, code, encode(request_hash, 'hex'), result::text"
                          " FROM holdfast.idempotency WHERE ns = %s AND key = %s"
                          % (lit(ns), lit(key)))

    def daemon_backends(self, waiting_on_lock=False):
        """Server pids of the daemon's connections to this database."""
        sql = ("SELECT pid FROM pg_stat_activity WHERE datname = %s"
               " AND application_name = 'holdfastd'" % lit(self.name))
        if waiting_on_lock:
            sql += " AND wait_event_type = 'Lock'"
        return [int(r[0]) for r in self.query(sql)]

    def dump(self, data_only=False):
        """Schema and data of the whole database (or the data only), as text
        (without pg_dump's random \\restrict key, so two dumps compare)."""
        args = [self.cluster.tool("pg_dump"), "-h", self.cluster.dir, "-p",
                str(self.cluster.port), "-U", SUPERUSER, "-d", self.name]
        if data_only:
            args.append("--data-only")
        r = subprocess.run(args, capture_output=True, text=True, timeout=60, check=True)
        return "".join(line for line in r.stdout.splitlines(True)
                       if not line.startswith(("\\restrict", "\\unrestrict")))

    def config(self, pool_size=2, statement_timeout_ms=2000, connect_timeout_ms=1000,
               user=APP, proxy=None):
        """The daemon's postgres section (Lua), optionally through a PgProxy."""
        dsn = proxy.dsn(self.name, user) if proxy else self.cluster.dsn(self.name, user)
        return ('postgres = { dsn = "%s", pool_size = %d, connect_timeout_ms = %d,'
                ' statement_timeout_ms = %d },'
                % (dsn, pool_size, connect_timeout_ms, statement_timeout_ms))

    def close_admin(self):
        """Forget the admin session (e.g. after the server restarted)."""
        if self._admin:
            self._admin.close()
            self._admin = None

    def close(self):
        self.close_admin()
        self.cluster.drop_database(self.name)


def confirm(client, ns, partition, ids, token, key, reference="", payload=b"", **kw):
    return client.call(confirm=pb().ConfirmRequest(
        namespace=ns, partition=partition, ids=ids, token=token, idempotency_key=key,
        reference=reference, payload=payload), **kw)


def send_confirm(client, ns, partition, ids, token, key, reference="", payload=b"", **kw):
    """Send without waiting; returns the request id."""
    return client.send(confirm=pb().ConfirmRequest(
        namespace=ns, partition=partition, ids=ids, token=token, idempotency_key=key,
        reference=reference, payload=payload), **kw)


def cancel(client, ns, partition, ids, key, reference="", **kw):
    return client.call(cancel=pb().CancelRequest(
        namespace=ns, partition=partition, ids=ids, idempotency_key=key, reference=reference),
        **kw)


def hold_token(client, ns, partition, ids, ttl_ms=0):
    r = client.hold(ns, partition, ids, ttl_ms=ttl_ms)
    assert harness.code_name(r.code) == "OK", r.message
    return r.hold.token, r.hold.fence
