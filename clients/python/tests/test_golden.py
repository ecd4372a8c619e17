"""Golden frames from protos/testdata: decode, compare with the JSON, re-encode byte for byte."""

import json
import struct
from pathlib import Path

import pytest
from google.protobuf import json_format

from holdfast import _model as m
from holdfast._gen import holdfast_pb2 as pb
from holdfast.framing import FrameReader, decode_response, encode_frame, encode_request

TESTDATA = Path(__file__).resolve().parents[3] / "protos" / "testdata"
CASES = json.loads((TESTDATA / "manifest.json").read_text())
TYPES = {"Request": pb.Request, "Response": pb.Response}


def test_manifest_is_complete():
    names = {c["name"] for c in CASES}
    assert len(names) == len(CASES), "duplicate case names"
    for need in ("hold_request", "hold_response_ok", "hold_response_held_by_another",
                 "confirm_request", "status_response", "large_id_request"):
        assert need in names
    assert {c["type"] for c in CASES} == {"Request", "Response"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_golden_frame_roundtrip(case):
    frame = (TESTDATA / case["file"]).read_bytes()
    (length,) = struct.unpack(">I", frame[:4])
    assert length == len(frame) - 4

    msg = TYPES[case["type"]]()
    msg.ParseFromString(frame[4:])

    # Same message as the JSON, compared both ways.
    expected = json_format.Parse(json.dumps(case["json"]), TYPES[case["type"]]())
    assert msg == expected
    assert json_format.MessageToDict(msg, preserving_proto_field_name=True) == case["json"]

    # Re-encoded byte for byte, with the client's own framing.
    assert encode_frame(msg) == frame
    if case["type"] == "Request":
        assert encode_request(msg) == frame


def test_response_frames_reassemble_from_single_bytes():
    """The reader must cope with frames split at every byte and glued together."""
    cases = [c for c in CASES if c["type"] == "Response"]
    stream = b"".join((TESTDATA / c["file"]).read_bytes() for c in cases)
    reader = FrameReader()
    bodies = []
    for i in range(len(stream)):
        bodies.extend(reader.feed(stream[i:i + 1]))
    assert reader.pending_bytes == 0
    got = [json_format.MessageToDict(decode_response(b), preserving_proto_field_name=True)
           for b in bodies]
    assert got == [c["json"] for c in cases]


def test_large_id_survives_as_uint64():
    case = next(c for c in CASES if c["name"] == "large_id_request")
    msg = pb.Request()
    msg.ParseFromString((TESTDATA / case["file"]).read_bytes()[4:])
    assert msg.id == 2**63 + 5


def test_client_builds_the_golden_hold_request():
    """The client's own request builder produces exactly the golden bytes."""
    case = next(c for c in CASES if c["name"] == "hold_request")
    call = m.hold_call("seat", "run-2026-12-01-KTX101", ["E7", "E8", "E9"], 60000)
    req = m.envelope("hold", call.msg,
                     "trace-7f3a.checkout:1", 1.5)
    req.id = 1
    assert encode_request(req) == (TESTDATA / case["file"]).read_bytes()


def test_client_builds_the_golden_confirm_request():
    case = next(c for c in CASES if c["name"] == "confirm_request")
    golden = pb.Request()
    golden.ParseFromString((TESTDATA / case["file"]).read_bytes()[4:])
    c = golden.confirm
    req = m.envelope("confirm", m.confirm_call(c.namespace, c.partition, list(c.ids), c.token,
                                               c.idempotency_key, c.reference, c.payload).msg,
                     golden.correlation_id, golden.timeout_ms / 1000)
    req.id = golden.id
    assert encode_request(req) == (TESTDATA / case["file"]).read_bytes()
