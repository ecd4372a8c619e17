"""Helpers for the deploy tests: paths, polling, and the service manager's
end of sd_notify. (A module of its own, not conftest.py, so that importing it
never picks up another suite's conftest.)"""
import os
import select
import socket
import struct
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
UNITS = DEPLOY / "systemd"


def build_dir() -> Path:
    """The CMake build directory: $HOLDFAST_BUILD_DIR, default <repo>/build."""
    return Path(os.environ.get("HOLDFAST_BUILD_DIR", REPO / "build")).resolve()


def wait_until(pred, timeout, what):
    """Poll pred() until it returns a true value; fail naming `what`. The
    bound only stops a hung test, it asserts nothing about speed."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


class NotifySocket:
    """The service manager's end of sd_notify: a datagram socket that keeps
    every message in order with the sender's pid (SCM_CREDENTIALS), as
    systemd does to enforce NotifyAccess=main."""

    def __init__(self, path: Path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(str(path))
        self.messages = []  # [(pid, {key: value})]
        self._cursor = 0

    def _receive(self, timeout):
        r, _, _ = select.select([self.sock], [], [], timeout)
        if not r:
            return
        data, anc, _, _ = self.sock.recvmsg(65536, socket.CMSG_SPACE(12))
        pid = None
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid, _uid, _gid = struct.unpack("iII", payload[:12])
        fields = {}
        for line in data.decode("utf-8", "replace").splitlines():
            key, sep, value = line.partition("=")
            if sep:
                fields[key] = value
        self.messages.append((pid, fields))

    def wait_for(self, key, value=None, timeout=30.0):
        """Next message (after the last one matched) that sets key[=value];
        returns (pid, fields). Messages are matched in order, so RELOADING=1
        then READY=1 really means that order."""
        deadline = time.monotonic() + timeout
        while True:
            while self._cursor < len(self.messages):
                pid, fields = self.messages[self._cursor]
                self._cursor += 1
                if key in fields and (value is None or fields[key] == value):
                    return pid, fields
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"no {key}{'=' + value if value else ''} notification; "
                            f"got {[f for _, f in self.messages]}")
            self._receive(min(left, 0.5))

    def close(self):
        self.sock.close()
