// The hand-written codec (src/codec.ts) against @bufbuild/protobuf: the same
// bytes for every request it writes, the same messages for every response it
// reads, on the golden frames and on many random messages.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { create, fromBinary, toBinary, type JsonValue } from "@bufbuild/protobuf";
import { FAST_ENCODE, decodeResponseBody, encodeCall } from "../src/codec.js";
import { encodeRequest } from "../src/frame.js";
import {
  Code,
  ErrorDetailSchema,
  ExtendResponseSchema,
  HoldResponseSchema,
  PoolTakeSchema,
  ReleaseResponseSchema,
  RequestSchema,
  ResponseSchema,
  SegmentSchema,
  StatusResponseSchema,
  type Request,
  type Response,
} from "../src/gen/holdfast/v1/holdfast_pb.js";

const TESTDATA = new URL("../../../../protos/testdata/", import.meta.url);
const cases: { name: string; type: string; file: string; json: JsonValue }[] = JSON.parse(
  readFileSync(new URL("manifest.json", TESTDATA), "utf8"),
);
const frameOf = (file: string) => readFileSync(new URL(file, TESTDATA));

/** What the client did before the codec: create() and toBinary(). */
function reference(id: number, correlationId: string, timeoutMs: number, traceparent: string, method: string, value: object): Buffer {
  const req = create(RequestSchema, {
    id: BigInt(id),
    correlationId,
    timeoutMs,
    traceparent,
    method: { case: method, value } as Request["method"],
  });
  return encodeRequest(req);
}

test("the encoder knows every field of the generated messages it writes", () => {
  // False after a .proto change: teach src/codec.ts the new fields.
  assert.equal(FAST_ENCODE, true);
});

test("golden requests: encodeCall writes them byte for byte", () => {
  let n = 0;
  for (const c of cases.filter((x) => x.type === "Request")) {
    const frame = frameOf(c.file);
    const req = fromBinary(RequestSchema, frame.subarray(4));
    if (req.id > BigInt(Number.MAX_SAFE_INTEGER) || req.method.case === undefined) continue;
    const got = encodeCall(Number(req.id), req.correlationId, req.timeoutMs, req.traceparent, req.method.case, req.method.value);
    assert.deepEqual(got, frame, c.name);
    n++;
  }
  assert.ok(n >= 10, `${n} golden requests`);
});

test("golden responses: decodeResponseBody reads what fromBinary reads", () => {
  for (const c of cases.filter((x) => x.type === "Response")) {
    const body = frameOf(c.file).subarray(4);
    assert.deepStrictEqual(decodeResponseBody(body), fromBinary(ResponseSchema, body), c.name);
  }
});

// A small deterministic PRNG, so that a failure can be reproduced.
function rng(seed: number) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
  const str = () => pick(["", "a", "seat", "E7", "ünïcødé", "日本", "x".repeat(200), "emoji 🎟️", `s${int(1e6)}`]);
  const u32 = () => pick([0, 1, 127, 128, 300, 16383, 16384, 2 ** 31, 2 ** 32 - 1, int(2 ** 32)]);
  return { next, int, pick, str, u32 };
}

test("random hold, extend and release requests: the same bytes as create() + toBinary()", () => {
  const r = rng(15);
  for (let i = 0; i < 3000; i++) {
    const method = r.pick(["hold", "extend", "release"] as const);
    const value: Record<string, unknown> = { namespace: r.str(), partition: r.str() };
    if (r.next() < 0.8) value.ids = Array.from({ length: r.int(4) }, r.str);
    else if (method === "hold") value.units = Array.from({ length: r.int(4) }, () => create(PoolTakeSchema, { pool: r.str(), count: r.u32() }));
    else value.pools = Array.from({ length: r.int(4) }, r.str);
    if (method !== "release" && r.next() < 0.7) value.ttlMs = r.u32();
    if (method !== "hold") value.token = r.str();
    if (r.next() < 0.3) value.segment = create(SegmentSchema, { fromStop: r.u32(), toStop: r.u32() });
    if (method === "hold") {
      if (r.next() < 0.3) value.session = r.next() < 0.5;
      if (r.next() < 0.3) value.waitMs = r.u32();
    }
    const id = r.pick([0, 1, 127, 128, 2 ** 32, Number.MAX_SAFE_INTEGER, 1 + r.int(1e9)]);
    const args = [id, r.str(), r.pick([1, 5000, 2 ** 32 - 1]), r.pick(["", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"]), method, value] as const;
    assert.deepEqual(encodeCall(...args), reference(...args), JSON.stringify(args));
  }
});

test("other methods and values out of range go through @bufbuild/protobuf as before", () => {
  const status = { namespace: "seat", partition: "p", ids: ["A1"], token: "" };
  assert.deepEqual(encodeCall(3, "c", 100, "", "status", status), reference(3, "c", 100, "", "status", status));
  const health = {};
  assert.deepEqual(encodeCall(4, "", 100, "", "health", health), reference(4, "", 100, "", "health", health));
  for (const ttlMs of [-1, 1.5, 2 ** 32]) {
    const hold = { namespace: "seat", partition: "p", ids: ["A1"], ttlMs };
    assert.throws(() => reference(5, "c", 100, "", "hold", hold));
    assert.throws(() => encodeCall(5, "c", 100, "", "hold", hold), `ttlMs ${ttlMs}`);
  }
});

test("random responses: the same messages as fromBinary", () => {
  const r = rng(51);
  const results: (() => Response["result"])[] = [
    () => ({ case: undefined }),
    () => ({ case: "hold", value: create(HoldResponseSchema, { token: r.str(), fence: BigInt(r.pick([0, 1, 2 ** 40, Number.MAX_SAFE_INTEGER])) , ttlMs: r.u32() }) }),
    () => ({ case: "hold", value: create(HoldResponseSchema, { token: "1.x", fence: 2n ** 63n + 7n }) }),
    () => ({ case: "extend", value: create(ExtendResponseSchema, { ttlMs: r.u32() }) }),
    () => ({ case: "release", value: create(ReleaseResponseSchema, { released: r.u32() }) }),
    () => ({ case: "status", value: create(StatusResponseSchema, { resources: [{ id: r.str(), ttlMs: -1n }] }) }),
  ];
  for (let i = 0; i < 3000; i++) {
    const resp = create(ResponseSchema, {
      id: r.pick([0n, 1n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 64n - 1n, BigInt(r.int(1e9))]),
      correlationId: r.str(),
      code: r.pick([Code.OK, Code.HELD_BY_ANOTHER, Code.NOT_HELD, -1 as Code, 2 ** 31 - 1]),
      message: r.str(),
      degraded: r.next() < 0.2,
      result: r.pick(results)(),
    });
    if (r.next() < 0.3) resp.error = create(ErrorDetailSchema, { field: r.str(), resourceId: r.str() });
    let body: Uint8Array = toBinary(ResponseSchema, resp);
    if (r.next() < 0.1) body = Buffer.concat([body, Buffer.from([0xf8, 0x07, 0x01])]); // unknown field 127
    assert.deepStrictEqual(decodeResponseBody(body), fromBinary(ResponseSchema, body));
  }
});

test("a truncated response is still an error", () => {
  const body = toBinary(ResponseSchema, create(ResponseSchema, { id: 9n, correlationId: "abc", result: { case: "hold", value: create(HoldResponseSchema, { token: "1.t" }) } }));
  for (let n = 1; n < body.length; n++) {
    let fast: unknown;
    let slow: unknown;
    try {
      fast = decodeResponseBody(body.subarray(0, n));
    } catch (err) {
      fast = err instanceof Error ? "error" : err;
    }
    try {
      slow = fromBinary(ResponseSchema, body.subarray(0, n));
    } catch (err) {
      slow = err instanceof Error ? "error" : err;
    }
    assert.deepStrictEqual(fast, slow, `first ${n} bytes`);
  }
});
