"""A RESP test double for the DELEX release path.

No packaged Redis has `DELEX key IFEQ value` (Redis >= 8.4), so this small
proxy sits in front of a real redis-server: it answers `COMMAND INFO DELEX`
and `DELEX` itself (DELEX as an atomic compare-and-delete run on the real
server) and forwards every other command unchanged. `command_info` chooses
what the detection sees: "present", "absent" or "denied" (an ACL error).
"""
import os
import socket
import threading

from harness import RespReader, encode_resp_command

COMPARE_AND_DELETE = ("if redis.call('GET', KEYS[1]) == ARGV[1] then "
                      "return redis.call('DEL', KEYS[1]) else return 0 end")


class RawReader(RespReader):
    """RespReader that also returns the raw bytes of what it read."""

    def read_raw(self):
        total = bytearray()
        value = self._read_tracking(total)
        return value, bytes(total)

    def _fill(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk

    def _take_line(self, total):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        total += line + b"\r\n"
        return line

    def _read_tracking(self, total):
        line = self._take_line(total)
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-", b":"):
            return line
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            self._fill(n + 2)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            total += data + b"\r\n"
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._read_tracking(total) for _ in range(n)]
        raise ValueError("bad RESP %r" % line)


class DelexDouble:
    def __init__(self, workdir, upstream_socket, command_info="present"):
        self.path = os.path.join(workdir, "double.sock")
        self.upstream = upstream_socket
        self.command_info = command_info
        self.seen = []  # (command, args) the double answered itself
        self.lock = threading.Lock()
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(self.path)
        self.listener.listen(16)
        self.stopping = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def address(self):
        return "unix:" + self.path

    def close(self):
        self.stopping = True
        self.listener.close()

    def _accept(self):
        while not self.stopping:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _answer(self, args, up, up_reader):
        name = args[0].upper()
        if name == b"COMMAND" and len(args) >= 3 and args[1].upper() == b"INFO" \
                and args[2].upper() == b"DELEX":
            # The daemon asks for DELEX and Valkey's DELIFEQ at once: one
            # entry per name, nil for a command the server lacks.
            with self.lock:
                self.seen.append(("COMMAND INFO", args[2:]))
            rest = b"$-1\r\n" * (len(args) - 3)
            count = b"*%d\r\n" % (len(args) - 2)
            if self.command_info == "present":
                return (count + b"*7\r\n$5\r\ndelex\r\n:-2\r\n*1\r\n+write\r\n:1\r\n:1\r\n:1\r\n"
                        b"*1\r\n+@keyspace\r\n" + rest)
            if self.command_info == "absent":
                return count + b"$-1\r\n" + rest
            return b"-NOPERM this user has no permissions to run the 'command|info' command\r\n"
        if name == b"DELEX":
            with self.lock:
                self.seen.append(("DELEX", args[1:]))
            if self.command_info == "absent":
                return b"-ERR unknown command 'DELEX', with args beginning with: \r\n"
            if len(args) != 4 or args[2].upper() != b"IFEQ":
                return b"-ERR syntax error\r\n"
            up.sendall(encode_resp_command([b"EVAL", COMPARE_AND_DELETE, b"1", args[1], args[3]]))
            return up_reader.read_raw()[1]
        return None

    def _serve(self, conn):
        up = socket.socket(socket.AF_UNIX)
        up.connect(self.upstream)
        client_reader, up_reader = RawReader(conn), RawReader(up)
        try:
            while True:
                args, raw = client_reader.read_raw()
                reply = self._answer(args, up, up_reader)
                if reply is None:
                    up.sendall(raw)
                    reply = up_reader.read_raw()[1]
                conn.sendall(reply)
        except (ConnectionError, OSError, ValueError):
            pass
        finally:
            conn.close()
            up.close()
