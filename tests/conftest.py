"""Fixtures: a private redis-server and holdfastd per test, in a short temp
dir (Unix socket paths are limited to 107 bytes)."""
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402


@pytest.fixture
def workdir():
    path = tempfile.mkdtemp(prefix="hf-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def redis(workdir):
    server = harness.RedisServer(workdir).start()
    yield server
    server.stop()


@pytest.fixture
def make_daemon(workdir, redis):
    """Factory: make_daemon(**config_overrides) -> started Daemon. Every daemon
    is stopped with SIGTERM at the end and must exit 0 with a clean log."""
    daemons = []

    def make(start=True, wait_ready=True, **kw):
        kw.setdefault("name", "holdfastd%d" % len(daemons))
        d = harness.Daemon(workdir, redis.address, **kw)
        daemons.append(d)
        if start:
            d.start(wait_ready=wait_ready)
        return d

    yield make
    for d in daemons:
        d.stop()


@pytest.fixture
def pgdb():
    """A fresh database of the shared PostgreSQL cluster (pgharness), with
    the schema migrated; dropped at the end."""
    import pgharness as pgh
    c = pgh.cluster()
    db = pgh.PgDatabase(c, c.new_database())
    yield db
    db.close()


@pytest.fixture
def daemon(make_daemon):
    return make_daemon()


@pytest.fixture
def client(daemon):
    with harness.Client(daemon.socket) as c:
        yield c
