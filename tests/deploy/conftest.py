"""Fixtures for the deploy tests: the built binaries, a short temp dir, a
real redis-server, and a NOTIFY_SOCKET listener.

Run through tools/test-deploy.sh, which builds the daemon and the package
first. HOLDFAST_BUILD_DIR names the CMake build directory (default: build).
"""
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from deploy_helpers import NotifySocket, build_dir, wait_until


@pytest.fixture(scope="session")
def binaries():
    """The built holdfastd and holdfastctl. A missing build is a failure, not
    a skip: a deploy check that silently did not run proves nothing."""
    daemon = build_dir() / "daemon" / "holdfastd"
    ctl = build_dir() / "daemon" / "holdfastctl"
    for b in (daemon, ctl):
        if not os.access(b, os.X_OK):
            pytest.fail(f"{b} is missing: build first (tools/test-deploy.sh does)")
    return {"holdfastd": daemon, "holdfastctl": ctl}


@pytest.fixture
def short_tmp():
    """A temp dir under /tmp: Unix socket paths must stay below 108 bytes,
    which pytest's own tmp_path does not guarantee."""
    d = tempfile.mkdtemp(prefix="hf-deploy-", dir="/tmp")
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


def _redis_ping(path):
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(1)
            s.connect(str(path))
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture
def redis_server(short_tmp):
    """A private redis-server listening only on a Unix socket."""
    exe = shutil.which("redis-server")
    if not exe:
        pytest.fail("redis-server is not installed (tools/deps-deploy.sh installs it)")
    sock = short_tmp / "redis.sock"
    proc = subprocess.Popen(
        [exe, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700",
         "--save", "", "--appendonly", "no", "--dir", str(short_tmp),
         "--logfile", str(short_tmp / "redis.log")],
        stdin=subprocess.DEVNULL)
    try:
        wait_until(lambda: proc.poll() is not None or _redis_ping(sock), 20, "redis-server")
        if proc.poll() is not None:
            pytest.fail("redis-server exited: " + (short_tmp / "redis.log").read_text())
        yield sock
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def notify_socket(short_tmp):
    n = NotifySocket(short_tmp / "notify.sock")
    yield n
    n.close()
