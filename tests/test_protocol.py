"""Bad input on the wire: a clear error or a closed connection, never a crash
or a hang, and the daemon keeps serving everybody else."""
import os
import socket
import struct

import harness
from harness import Client, code_name, pb


def read_answer_or_close(sock):
    """The daemon's answer to a broken frame, or None if it just closed."""
    sock.settimeout(5)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    if len(data) < 4:
        return None
    (n,) = struct.unpack(">I", data[:4])
    resp = pb().Response()
    resp.ParseFromString(data[4:4 + n])
    return resp


def still_serves(daemon):
    with Client(daemon.socket) as c:
        assert code_name(c.hold("seat", "alive", [os.urandom(4).hex()], ttl_ms=1000).code) == "OK"


def test_garbage_bytes(daemon):
    with Client(daemon.socket) as bystander:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(daemon.socket)
            # A small length, then bytes that are not a protobuf Request.
            s.sendall(struct.pack(">I", 6) + b"\xff\xff\xff\xff\xff\xff")
            resp = read_answer_or_close(s)
        assert resp is not None and code_name(resp.code) == "INVALID_ARGUMENT"
        assert resp.id == 0
        assert code_name(bystander.health().code) == "OK"
    still_serves(daemon)


def test_random_garbage_streams(daemon):
    for seed in range(20):
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(daemon.socket)
            s.sendall(os.urandom(64 + seed * 37))
            s.shutdown(socket.SHUT_WR)
            read_answer_or_close(s)  # an error answer or a close, either is fine
    still_serves(daemon)


def test_truncated_frame_then_close(daemon):
    req = pb().Request(id=5, health=pb().HealthRequest()).SerializeToString()
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(daemon.socket)
        s.sendall(struct.pack(">I", len(req) + 10) + req)  # promises more than it sends
        s.shutdown(socket.SHUT_WR)
        assert read_answer_or_close(s) is None
    still_serves(daemon)


def test_frame_split_across_writes_is_reassembled(daemon):
    req = pb().Request(id=77, health=pb().HealthRequest()).SerializeToString()
    frame = struct.pack(">I", len(req)) + req
    with Client(daemon.socket) as c:
        for b in frame:
            c.send_raw(bytes([b]))
        assert c.recv().id == 77


def test_oversized_length(make_daemon):
    d = make_daemon(limits="max_frame_bytes = 4096")
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(d.socket)
        s.sendall(struct.pack(">I", 0xFFFFFFF0))
        resp = read_answer_or_close(s)
    assert resp is not None and code_name(resp.code) == "RESOURCE_EXHAUSTED"
    assert "max_frame_bytes" in resp.message
    # A real request just above the limit is refused the same way.
    with Client(d.socket) as c:
        c.send(hold=pb().HoldRequest(namespace="seat", partition="p",
                                     ids=["x" * 100 for _ in range(50)]))
        resp = c.recv()
        assert code_name(resp.code) == "RESOURCE_EXHAUSTED"
    still_serves(d)


def test_unknown_method_gets_unimplemented_and_the_stream_stays_usable(daemon):
    # Field 99 is a method this daemon does not know (a newer client).
    body = b"\x08\x09" + b"\x9a\x06\x00"  # id=9, field 99 (length-delimited, empty)
    with Client(daemon.socket) as c:
        c.send_raw(struct.pack(">I", len(body)) + body)
        resp = c.recv()
        assert resp.id == 9 and code_name(resp.code) == "UNIMPLEMENTED"
        assert code_name(c.health().code) == "OK"


def test_empty_request_is_unimplemented(daemon):
    with Client(daemon.socket) as c:
        c.send_raw(struct.pack(">I", 0))
        resp = c.recv()
        assert code_name(resp.code) == "UNIMPLEMENTED"


def test_connection_limit(make_daemon):
    d = make_daemon(limits="max_connections = 2")

    def admitted_client():
        # Closes of earlier connections (the readiness probe) are noticed
        # asynchronously, so a slot may take a moment to free up.
        def attempt():
            c = Client(d.socket)
            try:
                if code_name(c.health().code) == "OK":
                    return c
            except (ConnectionError, OSError, AssertionError):
                pass  # refused: RESOURCE_EXHAUSTED (id 0) or a closed socket
            c.close()
            return None
        return harness.wait_for(attempt, timeout=5, what="a connection slot")

    a, b = admitted_client(), admitted_client()
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(d.socket)
            resp = read_answer_or_close(s)
        assert resp is not None and code_name(resp.code) == "RESOURCE_EXHAUSTED"
    finally:
        a.close()
        b.close()
    admitted_client().close()
    still_serves(d)


def test_peer_credentials_are_checked(make_daemon):
    uid = os.getuid()
    d = make_daemon(wait_ready=False, socket_extra="allow_uids = { %d }" % (uid + 4242))
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(d.socket)
        resp = read_answer_or_close(s)
    assert resp is not None and code_name(resp.code) == "PERMISSION_DENIED"
    allowed = make_daemon(socket_extra="allow_uids = { %d }" % uid)
    still_serves(allowed)


def test_socket_mode_and_group_are_applied(make_daemon):
    import grp
    group = grp.getgrgid(os.getgid()).gr_name
    d = make_daemon(socket_extra='mode = "0660", group = "%s"' % group)
    st = os.stat(d.socket)
    assert oct(st.st_mode & 0o777) == "0o660"
    assert st.st_gid == os.getgid()


def test_unknown_socket_group_refuses_to_start(make_daemon):
    d = make_daemon(start=False, socket_extra='group = "no-such-group-hf"')
    import subprocess
    r = subprocess.run([harness.HOLDFASTD, "--config", d.config], capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 1 and "no-such-group-hf" in r.stderr


def test_client_that_never_reads_does_not_stall_others(daemon):
    hog = socket.socket(socket.AF_UNIX)
    hog.connect(daemon.socket)
    hog.setblocking(False)
    req = pb().Request(id=1, metrics=pb().MetricsRequest()).SerializeToString()
    frame = struct.pack(">I", len(req)) + req
    sent = 0
    try:
        for _ in range(3000):
            try:
                hog.send(frame)
                sent += 1
            except BlockingIOError:
                break
        still_serves(daemon)
    finally:
        hog.close()
    assert sent > 0
