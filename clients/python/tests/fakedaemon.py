"""A scripted stand-in for holdfastd's socket, for transport tests only.

It checks the client's framing, id matching, deadlines and reconnects in
situations a real daemon does not produce on demand (answers out of order, a
silent peer, an id-0 rejection). Behaviour against Redis/PostgreSQL is tested
against the real daemon in test_live.py.
"""

import os
import socket
import struct
import threading
from typing import Callable, List, Optional, Union

from holdfast._gen import holdfast_pb2 as pb

# handler(request) -> a response to send now, a list of them, or None to stay silent
Handler = Callable[[pb.Request], Union[None, pb.Response, List[pb.Response]]]


def ok_for(req: pb.Request) -> pb.Response:
    resp = pb.Response(id=req.id, correlation_id=req.correlation_id, code=pb.CODE_OK)
    which = req.WhichOneof("method")
    if which == "hold":
        resp.hold.token = "1.fake"
        resp.hold.fence = 1
        resp.hold.ttl_ms = req.hold.ttl_ms or 60000
    elif which == "release":
        resp.release.released = len(req.release.ids)
    elif which == "health":
        resp.health.live = True
        resp.health.ready = True
    else:
        getattr(resp, which).SetInParent()
    return resp


class FakeDaemon:
    def __init__(self, path: str, handler: Handler = ok_for) -> None:
        self.path = path
        self.handler = handler
        self.requests: List[pb.Request] = []
        self.connections = 0
        self._lock = threading.Lock()
        self._conns: List[socket.socket] = []
        self._listener: Optional[socket.socket] = None
        self.reading = threading.Event()  # cleared: the daemon stops reading its connections
        self.reading.set()

    def start(self) -> "FakeDaemon":
        if os.path.exists(self.path):
            os.unlink(self.path)
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ls.bind(self.path)
        ls.listen(16)
        self._listener = ls
        threading.Thread(target=self._accept, args=(ls,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Like a daemon exiting: close the listener and every connection."""
        ls, self._listener = self._listener, None
        if ls is not None:
            ls.close()
        if os.path.exists(self.path):
            os.unlink(self.path)
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def half_close(self) -> None:
        """Stop writing on every connection (the client reads EOF) but keep
        reading them, like a daemon that is going away."""
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            c.shutdown(socket.SHUT_WR)

    def send(self, conn: socket.socket, resp: pb.Response) -> None:
        body = resp.SerializeToString()
        conn.sendall(struct.pack(">I", len(body)) + body)

    def send_raw(self, data: bytes) -> None:
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            c.sendall(data)

    def _accept(self, ls: socket.socket) -> None:
        while True:
            try:
                conn, _ = ls.accept()
            except OSError:
                return
            with self._lock:
                self._conns.append(conn)
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        try:
            while True:
                self.reading.wait()
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
                while len(buf) >= 4:
                    (n,) = struct.unpack(">I", buf[:4])
                    if len(buf) < 4 + n:
                        break
                    req = pb.Request()
                    req.ParseFromString(buf[4:4 + n])
                    buf = buf[4 + n:]
                    with self._lock:
                        self.requests.append(req)
                    out = self.handler(req)
                    for resp in (out if isinstance(out, list) else [out] if out else []):
                        self.send(conn, resp)
        except OSError:
            return
