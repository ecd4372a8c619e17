"""Fixtures for the live tests: a real holdfastd with Redis (and PostgreSQL).

The live tests only ever talk to a stack made for tests (the client contract,
protos/contract/client-contract.md): they restart its daemon, pause its Redis
and confirm into its `seat` namespace. HOLDFAST_SOCKET, which points at a
user's real daemon, is ignored. Where the stack comes from:
  HOLDFAST_TEST_STACK  a directory where `tools/devstack.sh up DIR` runs (the
                       client test scripts start one and set this)
  otherwise            the session runs `tools/devstack.sh up` in a temp dir and
                       `down` at the end; the live tests are skipped when
                       holdfastd is not built.

Tests marked `needs_wait` need a daemon that waits in line
(HoldRequest.wait_ms, issue 11); they run by default and are skipped only
when HOLDFAST_NO_WAIT is set (to a non-empty value), for a daemon built
before waiting.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import List, Optional

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # fakedaemon, for test_transport

REPO = Path(__file__).resolve().parents[3]
DEVSTACK = REPO / "tools" / "devstack.sh"
TEST_STACK_ENV = "HOLDFAST_TEST_STACK"
NO_WAIT_ENV = "HOLDFAST_NO_WAIT"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "needs_wait: needs a daemon that waits in line (HoldRequest.wait_ms, "
        f"issue 11); skipped when {NO_WAIT_ENV} is set")


def pytest_collection_modifyitems(config, items):
    if not os.environ.get(NO_WAIT_ENV):
        return
    skip = pytest.mark.skip(reason=f"{NO_WAIT_ENV} is set: the daemon does not wait in line")
    for item in items:
        if "needs_wait" in item.keywords:
            item.add_marker(skip)


def stack_choice(environ) -> "tuple[str, str]":
    """Where the live tests' daemon comes from: ("given", DIR), ("own", "") or
    ("skip", reason). Never from HOLDFAST_SOCKET."""
    if environ.get(TEST_STACK_ENV):
        return "given", environ[TEST_STACK_ENV]
    if not DEVSTACK.exists():
        return "skip", f"live tests need a stack: {DEVSTACK} is missing and {TEST_STACK_ENV} is unset"
    holdfastd = environ.get("HOLDFASTD") or str(REPO / "build" / "daemon" / "holdfastd")
    if not os.access(holdfastd, os.X_OK):
        return "skip", (f"live tests start their own stack, but {holdfastd} is not built "
                        f"(tools/build.sh), and {TEST_STACK_ENV} is unset")
    if shutil.which("redis-server") is None:
        return "skip", "live tests start their own stack, but redis-server is not installed"
    return "own", ""


class Stack:
    def __init__(self, socket_path: str, dir: Optional[Path], owned: bool) -> None:
        self.socket = socket_path
        self.dir = dir
        self.owned = owned
        self.tokens: List[str] = []        # every token issued to these tests
        self._spawned: List[subprocess.Popen] = []

    # -- Redis ----------------------------------------------------------------

    @property
    def redis_socket(self) -> Optional[str]:
        if self.dir is None:
            return None
        p = self.dir / "redis.sock"
        return str(p) if p.exists() else None

    def redis_pid(self) -> int:
        """Asked from Redis itself (INFO server), so no pid file is needed."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(self.redis_socket)
            s.sendall(b"INFO server\r\n")
            data = b""
            while b"process_id:" not in data or not data.endswith(b"\r\n\r\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        m = re.search(rb"process_id:(\d+)", data)
        assert m, "redis INFO server gave no process_id"
        return int(m.group(1))

    @contextmanager
    def redis_paused(self):
        """SIGSTOP the stack's redis-server: it accepts bytes but never answers."""
        pid = self.redis_pid()
        os.kill(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(pid, signal.SIGCONT)

    # -- the daemon -----------------------------------------------------------

    def daemon_pid(self) -> Optional[int]:
        """The holdfastd serving this stack: its pid file, else the process whose
        command line names this stack's directory."""
        assert self.dir is not None
        pidfile = self.dir / "holdfastd.pid"
        if pidfile.exists():
            txt = pidfile.read_text().strip()
            if txt.isdigit() and _alive(int(txt)):
                return int(txt)
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and os.path.basename(argv[0]) == b"holdfastd" and \
                    any(str(self.dir).encode() in a for a in argv[1:]) and _alive(int(entry)):
                return int(entry)
        return None

    @property
    def can_restart(self) -> bool:
        # A stack we do not own must keep a pid file its `down` can use.
        return self.dir is not None and (self.owned or (self.dir / "holdfastd.pid").exists())

    def restart_daemon(self) -> None:
        """SIGTERM the daemon and start it again with the same command line,
        environment and working directory."""
        pid = self.daemon_pid()
        assert pid is not None, f"no holdfastd found for {self.dir}"
        argv = [a.decode() for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
        env = dict(kv.split("=", 1) for kv in
                   Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace").split("\0")
                   if "=" in kv)
        # systemd-style socket activation state must not leak into the new process
        for k in ("LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "NOTIFY_SOCKET"):
            env.pop(k, None)
        cwd = os.readlink(f"/proc/{pid}/cwd")
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while _alive(pid):
            assert time.monotonic() < deadline, "holdfastd did not exit after SIGTERM"
            time.sleep(0.02)
        log = open(self.dir / "holdfastd.log", "ab")
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=log, start_new_session=True)
        log.close()
        self._spawned.append(proc)
        pidfile = self.dir / "holdfastd.pid"
        if pidfile.exists():
            pidfile.write_text(f"{proc.pid}\n")  # so `devstack.sh down` stops this one

    def stop_spawned(self) -> None:
        for p in self._spawned:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _wait_ready(path: str, seconds: float) -> None:
    from holdfast import Client, HoldfastError
    deadline = time.monotonic() + seconds
    last: object = None
    with Client(path, timeout=1) as c:
        while time.monotonic() < deadline:
            try:
                if c.health().ready:
                    return
                last = "daemon not ready"
            except HoldfastError as exc:
                last = exc
            time.sleep(0.1)
    raise RuntimeError(f"holdfastd at {path} not ready: {last}")


@pytest.fixture(scope="session")
def stack():
    kind, arg = stack_choice(os.environ)
    if kind == "given":
        d = Path(arg)
        # A daemon restarted by the tests is left running: its pid is in
        # DIR/holdfastd.pid, so `devstack.sh down DIR` stops it.
        s = Stack(str(d / "holdfast.sock"), d, owned=False)
        _wait_ready(s.socket, 30)
        yield s
        return
    if kind == "skip":
        pytest.skip(arg)
    d = Path(tempfile.mkdtemp(prefix="hf-py-"))  # short: socket paths max 107 bytes
    up = subprocess.run(["bash", str(DEVSTACK), "up", str(d)], capture_output=True, text=True,
                        timeout=300)
    if up.returncode != 0:
        subprocess.run(["bash", str(DEVSTACK), "down", str(d)], capture_output=True, timeout=120)
        shutil.rmtree(d, ignore_errors=True)
        pytest.fail(f"tools/devstack.sh up failed ({up.returncode}):\n{up.stdout}\n{up.stderr}")
    s = Stack(str(d / "holdfast.sock"), d, owned=True)
    try:
        _wait_ready(s.socket, 30)
        yield s
    finally:
        subprocess.run(["bash", str(DEVSTACK), "down", str(d)], capture_output=True, timeout=120)
        s.stop_spawned()
        if not os.environ.get("HOLDFAST_KEEP_STACK"):
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def client(stack):
    from holdfast import Client
    with Client(stack.socket, timeout=5) as c:
        yield c


@pytest.fixture
def partition():
    """A fresh partition per test, so tests never see each other's holds."""
    import uuid
    return f"py-{uuid.uuid4().hex[:16]}"
