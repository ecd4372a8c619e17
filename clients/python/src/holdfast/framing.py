"""Wire framing: 4-byte big-endian length, then one protobuf envelope. No I/O."""

from __future__ import annotations

import struct
from typing import List

from ._gen import holdfast_pb2 as pb

HEADER = struct.Struct(">I")

# Responses are small (a Status of 64 ids, a metrics page); anything far larger
# means the stream is out of step, so the connection is dropped, not buffered.
MAX_RESPONSE_FRAME = 16 * 1024 * 1024


class FrameError(Exception):
    """The byte stream is not a valid sequence of frames."""


def encode_request(req: pb.Request) -> bytes:
    body = req.SerializeToString()
    return HEADER.pack(len(body)) + body


def encode_frame(msg) -> bytes:
    """Frame any envelope (Request or Response); used by tests and tools."""
    body = msg.SerializeToString()
    return HEADER.pack(len(body)) + body


def decode_response(body: bytes) -> pb.Response:
    resp = pb.Response()
    try:
        resp.ParseFromString(body)
    except Exception as exc:  # DecodeError, or a C-extension variant of it
        raise FrameError(f"undecodable response frame ({len(body)} bytes): {exc}") from exc
    return resp


class FrameReader:
    """Collects stream bytes and yields complete frame bodies."""

    def __init__(self, max_frame: int = MAX_RESPONSE_FRAME) -> None:
        self._buf = bytearray()
        self._max = max_frame

    def feed(self, data: bytes) -> List[bytes]:
        self._buf += data
        out: List[bytes] = []
        while len(self._buf) >= HEADER.size:
            (n,) = HEADER.unpack_from(self._buf)
            if n > self._max:
                raise FrameError(f"frame of {n} bytes exceeds the {self._max}-byte limit")
            end = HEADER.size + n
            if len(self._buf) < end:
                break
            out.append(bytes(self._buf[HEADER.size:end]))
            del self._buf[:end]
        return out

    @property
    def pending_bytes(self) -> int:
        return len(self._buf)
