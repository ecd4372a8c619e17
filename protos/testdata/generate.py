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

    # Pools (a namespace of kind "pools"): units instead of ids.
    GA, SHOW = "ga", "show-2026-12-24-2000"
    UNITS = [pb.PoolTake(pool="adult", count=2), pb.PoolTake(pool="child", count=1)]
    PTOKEN = f"{FENCE + 7}.Zm9vYmFyYmF6cXV4MTIzNA"  # fixture, not a real token
    add("pool_hold_request", "Hold 2 adult + 1 child units, all or nothing",
        Req(id=20, correlation_id="ga-1", timeout_ms=1500,
            hold=pb.HoldRequest(namespace=GA, partition=SHOW, units=UNITS, ttl_ms=120000)))
    add("pool_hold_response_ok", "Units held: token, fence and ttl like any hold",
        Resp(id=20, correlation_id="ga-1", code=pb.CODE_OK,
             hold=pb.HoldResponse(token=PTOKEN, fence=FENCE + 7, ttl_ms=120000)))
    add("pool_hold_response_held_by_another", "Too few free units: the rest is held",
        Resp(id=21, correlation_id="ga-2", code=pb.CODE_HELD_BY_ANOTHER,
             message="pool 'adult': 2 units asked, 1 free; the rest is held by others",
             error=pb.ErrorDetail(resource_id="adult")))
    add("pool_hold_response_sold_out", "Too few units left unsold (sold out)",
        Resp(id=22, correlation_id="ga-3", code=pb.CODE_CONFIRMED,
             message="pool 'child': 1 units asked, 0 left unsold (sold out)",
             error=pb.ErrorDetail(resource_id="child")))
    add("pool_extend_request", "Extend a hold of units",
        Req(id=23, correlation_id="ga-4",
            extend=pb.ExtendRequest(namespace=GA, partition=SHOW, pools=["adult", "child"],
                                    token=PTOKEN, ttl_ms=300000)))
    add("pool_release_request", "Release a hold of units",
        Req(id=24, correlation_id="ga-5",
            release=pb.ReleaseRequest(namespace=GA, partition=SHOW, pools=["adult", "child"],
                                      token=PTOKEN)))
    add("pool_release_response", "Release OK: 3 units given back",
        Resp(id=24, correlation_id="ga-5", code=pb.CODE_OK,
             release=pb.ReleaseResponse(released=3)))
    add("pool_status_request", "Status of two pools, with the caller's token",
        Req(id=25, correlation_id="ga-6",
            status=pb.StatusRequest(namespace=GA, partition=SHOW, pools=["adult", "child"],
                                    token=PTOKEN)))
    add("pool_status_response", "Capacity, sold, held, free and this token's units per pool",
        Resp(id=25, correlation_id="ga-6", code=pb.CODE_OK,
             status=pb.StatusResponse(pools=[
                 pb.PoolStatus(pool="adult", capacity=5000, sold=4990, held=7, free=3, owned=2,
                               ttl_ms=118250),
                 pb.PoolStatus(pool="child", capacity=500, sold=500, held=1, free=0, owned=1,
                               ttl_ms=118250),
             ])))
    add("pool_confirm_request", "Confirm exactly the units the token holds",
        Req(id=26, correlation_id="ga-7", timeout_ms=5000,
            confirm=pb.ConfirmRequest(namespace=GA, partition=SHOW, units=UNITS, token=PTOKEN,
                                      idempotency_key="order-4712:confirm",
                                      reference="order-4712", payload=b"{\"tickets\":3}")))
    add("pool_confirm_response", "Units sold",
        Resp(id=26, correlation_id="ga-7", code=pb.CODE_OK,
             confirm=pb.ConfirmResponse(fence=FENCE + 7, units=UNITS,
                                        confirmed_at_unix_ms=1764412399456)))
    add("pool_confirm_response_sold_out", "PostgreSQL refuses: fewer units left than asked",
        Resp(id=27, correlation_id="ga-8", code=pb.CODE_CONFLICT,
             message="pool 'adult' has only 1 units left unsold; nothing was sold",
             error=pb.ErrorDetail(resource_id="adult")))
    add("pool_cancel_request", "Give back one adult unit of an order",
        Req(id=28, correlation_id="ga-9",
            cancel=pb.CancelRequest(namespace=GA, partition=SHOW,
                                    units=[pb.PoolTake(pool="adult", count=1)],
                                    idempotency_key="order-4712:refund-1",
                                    reference="order-4712")))
    add("pool_cancel_response", "Cancel OK: 1 unit given back",
        Resp(id=28, correlation_id="ga-9", code=pb.CODE_OK,
             cancel=pb.CancelResponse(cancelled=1, units=[pb.PoolTake(pool="adult", count=1)])))
    add("set_capacity_request", "Set a pool's capacity",
        Req(id=29, correlation_id="ops-cap-1",
            set_capacity=pb.SetCapacityRequest(namespace=GA, partition=SHOW, pool="adult",
                                               capacity=5000)))
    add("set_capacity_response", "Capacity set; sold units as PostgreSQL has them",
        Resp(id=29, correlation_id="ops-cap-1", code=pb.CODE_OK,
             set_capacity=pb.SetCapacityResponse(
                 pool=pb.PoolCapacity(pool="adult", capacity=5000, sold=4990))))
    add("set_capacity_default_request", "Set the partition's default capacity (per-user pools)",
        Req(id=30, correlation_id="ops-cap-2",
            set_capacity=pb.SetCapacityRequest(namespace="coupon", partition="batch-7",
                                               capacity=1, partition_default=True)))
    add("set_capacity_response_below_sold", "Lowering below what is sold is refused",
        Resp(id=31, correlation_id="ops-cap-3", code=pb.CODE_FAILED_PRECONDITION,
             message="pool 'adult' has 4990 units sold; a capacity of 4000 is below that; "
                     "nothing was changed",
             error=pb.ErrorDetail(field="capacity", resource_id="adult")))
    add("get_capacity_request", "Capacity and sold units of two pools",
        Req(id=32, correlation_id="ops-cap-4",
            get_capacity=pb.GetCapacityRequest(namespace=GA, partition=SHOW,
                                               pools=["adult", "user-17"])))
    add("get_capacity_response", "A pool with its own capacity, one following the default",
        Resp(id=32, correlation_id="ops-cap-4", code=pb.CODE_OK,
             get_capacity=pb.GetCapacityResponse(
                 pools=[pb.PoolCapacity(pool="adult", capacity=5000, sold=4990),
                        pb.PoolCapacity(pool="user-17", capacity=1, sold=1,
                                        partition_default=True)],
                 default_capacity=1)))
    add("session_hold_request", "Hold bound to the connection (session = true, no ttl_ms)",
        Req(id=15, correlation_id="sess-1", timeout_ms=2000,
            hold=pb.HoldRequest(namespace=NS, partition=PART, ids=["E7", "E8"],
                                session=True)))
    add("waiting_hold_request", "Hold that waits in line up to 3 s for a held seat",
        Req(id=16, correlation_id="wait-1", timeout_ms=5000,
            hold=pb.HoldRequest(namespace=NS, partition=PART, ids=["E7"],
                                ttl_ms=60000, wait_ms=3000)))
    add("session_event_response",
        "Unsolicited session event (id 0): two session holds lost, one of them by leg",
        Resp(id=0, code=pb.CODE_OK, message="session holds were lost",
             session_event=pb.SessionEvent(lost=[
                 pb.SessionHoldLost(namespace=NS, partition=PART, ids=["E7", "E8"],
                                    fence=FENCE, reason=pb.CODE_NOT_HELD, resource_id="E7",
                                    message="could not be renewed before its TTL ran out"),
                 pb.SessionHoldLost(namespace="train", partition="KTX101-2026-12-01",
                                    ids=["E7@3", "E7@4"], fence=FENCE + 1,
                                    reason=pb.CODE_HELD_BY_ANOTHER, resource_id="E7@4",
                                    message="held by another token: this hold was lost"),
             ])))
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
