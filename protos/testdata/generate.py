#!/usr/bin/python3
"""Writes the golden wire frames shared by the daemon and every client.

Each case becomes `<name>.bin` = one complete frame (4-byte big-endian length,
then the serialized holdfast.v1.Request or Response envelope), and
manifest.json lists every case with its proto3 canonical JSON form, so a
client test can decode the frame, re-encode it byte for byte and compare the
decoded message with the JSON.

Run with Debian's python3 (python3-protobuf) and protoc (protobuf-compiler):

    /usr/bin/python3 protos/testdata/generate.py

All values are fixed, so the output is deterministic; re-running it must not
change any file (CI can check with `git diff --exit-code protos/testdata`).
The tokens below are made-up fixtures, never issued by any daemon.
"""

import importlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.dirname(HERE)  # protos/
PROTO_FILE = "holdfast/v1/holdfast.proto"


def load_pb2():
    """Compile the .proto into a temp dir (nothing generated is kept)."""
    protoc = shutil.which("protoc")
    if protoc is None:
        sys.exit("generate.py: protoc not found (apt-get install protobuf-compiler)")
    out = tempfile.mkdtemp(prefix="hf-golden-")
    subprocess.run(
        [protoc, f"--proto_path={PROTO_ROOT}", f"--python_out={out}", PROTO_FILE],
        check=True,
    )
    sys.path.insert(0, out)
    mod = importlib.import_module("holdfast.v1.holdfast_pb2")
    return mod, out


def build_cases(pb):
    NS, PART = "seat", "run-2026-12-01-KTX101"
    IDS = ["E7", "E8", "E9"]
    FENCE = 1764412345678901
    TOKEN = f"{FENCE}.q83vEjRWeJCrze8SNFZ4kA"  # fixture, not a real token
    Req, Resp = pb.Request, pb.Response
    cases = []

    def add(name, description, msg):
        cases.append((name, description, msg))

    add("hold_request", "Hold 3 ids with ttl, timeout and correlation id",
        Req(id=1, correlation_id="trace-7f3a.checkout:1", timeout_ms=1500,
            hold=pb.HoldRequest(namespace=NS, partition=PART, ids=IDS, ttl_ms=60000)))
    add("hold_response_ok", "Hold granted: token, fence and applied ttl",
        Resp(id=1, correlation_id="trace-7f3a.checkout:1", code=pb.CODE_OK,
             hold=pb.HoldResponse(token=TOKEN, fence=FENCE, ttl_ms=60000)))
    add("hold_response_held_by_another", "Hold refused: E8 held by another token",
        Resp(id=2, correlation_id="trace-7f3a.checkout:2", code=pb.CODE_HELD_BY_ANOTHER,
             message="resource E8 is held by another token",
             error=pb.ErrorDetail(resource_id="E8")))
    add("hold_response_confirmed", "Hold refused: E9 already confirmed (sold)",
        Resp(id=3, correlation_id="c3", code=pb.CODE_CONFIRMED,
             message="resource E9 is confirmed",
             error=pb.ErrorDetail(resource_id="E9")))
    add("extend_request", "Extend the hold to 120 s",
        Req(id=4, correlation_id="trace-7f3a.checkout:3", timeout_ms=1000,
            extend=pb.ExtendRequest(namespace=NS, partition=PART, ids=IDS,
                                    token=TOKEN, ttl_ms=120000)))
    add("extend_response", "Extend OK",
        Resp(id=4, correlation_id="trace-7f3a.checkout:3", code=pb.CODE_OK,
             extend=pb.ExtendResponse(ttl_ms=120000)))
    add("release_request", "Release the hold (daemon default timeout)",
        Req(id=5, correlation_id="trace-7f3a.checkout:4",
            release=pb.ReleaseRequest(namespace=NS, partition=PART, ids=IDS, token=TOKEN)))
    add("release_response", "Release OK, 3 ids deleted",
        Resp(id=5, correlation_id="trace-7f3a.checkout:4", code=pb.CODE_OK,
             release=pb.ReleaseResponse(released=3)))
    add("release_response_not_held", "Release of an expired hold",
        Resp(id=6, correlation_id="c6", code=pb.CODE_NOT_HELD,
             message="hold expired or never existed",
             error=pb.ErrorDetail(resource_id="E7"),
             release=pb.ReleaseResponse(released=0)))
    add("confirm_request", "Confirm with idempotency key, reference and binary payload",
        Req(id=7, correlation_id="trace-7f3a.checkout:5", timeout_ms=5000,
            confirm=pb.ConfirmRequest(namespace=NS, partition=PART, ids=IDS, token=TOKEN,
                                      idempotency_key="order-4711:confirm",
                                      reference="order-4711",
                                      payload=b"\x00\x01\xfe\xff{\"seats\":3}")))
    add("confirm_request_traceparent",
        "Confirm carrying a W3C traceparent (sampled) beside its correlation id",
        Req(id=15, correlation_id="trace-7f3a.checkout:6", timeout_ms=5000,
            traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            confirm=pb.ConfirmRequest(namespace=NS, partition=PART, ids=IDS, token=TOKEN,
                                      idempotency_key="order-4712:confirm",
                                      reference="order-4712")))
    add("confirm_response", "Confirm OK with three claims",
        Resp(id=7, correlation_id="trace-7f3a.checkout:5", code=pb.CODE_OK,
             confirm=pb.ConfirmResponse(
                 fence=FENCE,
                 claims=[pb.Claim(resource_id=i, fence=FENCE, reference="order-4711",
                                  confirmed_at_unix_ms=1764412399123) for i in IDS])))
    add("confirm_response_replayed", "Idempotent retry: stored result replayed",
        Resp(id=8, correlation_id="trace-7f3a.checkout:5", code=pb.CODE_OK,
             confirm=pb.ConfirmResponse(
                 fence=FENCE,
                 claims=[pb.Claim(resource_id="E7", fence=FENCE, reference="order-4711",
                                  confirmed_at_unix_ms=1764412399123)],
                 replayed=True)))
    add("confirm_response_conflict", "Confirm refused: E8 already claimed",
        Resp(id=9, correlation_id="c9", code=pb.CODE_CONFLICT,
             message="resource E8 is already claimed",
             error=pb.ErrorDetail(resource_id="E8")))
    add("cancel_request", "Cancel a confirmed claim",
        Req(id=10, correlation_id="trace-7f3a.refund:1", timeout_ms=3000,
            cancel=pb.CancelRequest(namespace=NS, partition=PART, ids=IDS,
                                    idempotency_key="order-4711:cancel",
                                    reference="order-4711")))
    add("cancel_response", "Cancel OK",
        Resp(id=10, correlation_id="trace-7f3a.refund:1", code=pb.CODE_OK,
             cancel=pb.CancelResponse(cancelled=3)))
    add("status_request", "Status of four ids, with the caller's token",
        Req(id=11, correlation_id="diag-1",
            status=pb.StatusRequest(namespace=NS, partition=PART,
                                    ids=["E6", "E7", "E8", "E9"], token=TOKEN)))
    add("status_response", "Free, held (owned), held (other), confirmed",
        Resp(id=11, correlation_id="diag-1", code=pb.CODE_OK,
             status=pb.StatusResponse(resources=[
                 pb.ResourceStatus(id="E6", state=pb.RESOURCE_STATE_FREE, ttl_ms=0),
                 pb.ResourceStatus(id="E7", state=pb.RESOURCE_STATE_HELD, ttl_ms=59875, owned=True),
                 pb.ResourceStatus(id="E8", state=pb.RESOURCE_STATE_HELD, ttl_ms=1234),
                 pb.ResourceStatus(id="E9", state=pb.RESOURCE_STATE_CONFIRMED, ttl_ms=-1),
             ])))
    add("health_request", "Health: empty method message",
        Req(id=12, health=pb.HealthRequest()))
    add("health_response", "Health: live and ready",
        Resp(id=12, correlation_id="hf-000000000000000c", code=pb.CODE_OK,
             health=pb.HealthResponse(live=True, ready=True, version="0.1.0", redis="up",
                                      postgres="disabled", script_path="fcall",
                                      release_path="script", library="holdfast_v1",
                                      connections=2, in_flight=1, draining=False)))
    add("metrics_request", "Metrics request",
        Req(id=13, correlation_id="ops", metrics=pb.MetricsRequest()))
    add("metrics_response", "Metrics in Prometheus text format",
        Resp(id=13, correlation_id="ops", code=pb.CODE_OK,
             metrics=pb.MetricsResponse(
                 text="# HELP holdfast_requests_total Requests handled.\n"
                      "# TYPE holdfast_requests_total counter\n"
                      "holdfast_requests_total{op=\"hold\",code=\"ok\"} 42\n")))
    add("invalid_argument_response", "Invalid id: field named, message says why",
        Resp(id=14, correlation_id="c14", code=pb.CODE_INVALID_ARGUMENT,
             message="ids[3]: must match [A-Za-z0-9._-]{1,128}",
             error=pb.ErrorDetail(field="ids[3]")))
    add("undecodable_frame_response", "Answer to a frame that could not be decoded (id 0)",
        Resp(id=0, correlation_id="hf-0000000000000000", code=pb.CODE_INVALID_ARGUMENT,
             message="undecodable request frame"))
    add("large_id_request", "Request id 2^63+5: uint64 above int64 range",
        Req(id=2**63 + 5, correlation_id="big-id", timeout_ms=250,
            hold=pb.HoldRequest(namespace="product-modify", partition="product-10001",
                                ids=["10001"])))
    add("large_id_response", "Response echoing id 2^63+5",
        Resp(id=2**63 + 5, correlation_id="big-id", code=pb.CODE_UNAVAILABLE,
             message="redis unavailable"))
    return cases


def main():
    pb, tmp = load_pb2()
    from google.protobuf import json_format

    try:
        manifest = []
        for name, description, msg in build_cases(pb):
            body = msg.SerializeToString(deterministic=True)
            frame = struct.pack(">I", len(body)) + body
            fname = f"{name}.bin"
            with open(os.path.join(HERE, fname), "wb") as f:
                f.write(frame)
            js = json_format.MessageToJson(msg, preserving_proto_field_name=True)
            manifest.append({
                "name": name,
                "type": type(msg).DESCRIPTOR.name,  # "Request" | "Response"
                "file": fname,
                "description": description,
                "json": json.loads(js),
            })
        with open(os.path.join(HERE, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=2)
            f.write("\n")
        print(f"wrote {len(manifest)} golden frames to {HERE}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
