// Session holds and waiting in line, on the wire, against the scripted peer:
// what a session hold and a waiting hold send, how the daemon's unsolicited
// SessionEvent (id 0) and the end of the connection reach the holds, and
// that any other id-0 frame stays fatal. The daemon's side is in
// live-sessions.ts (run from live.test.ts) and live-wait.test.ts.

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import { inspect } from "node:util";

import { create, toJson, type JsonValue } from "@bufbuild/protobuf";
import { Client, Code, HoldfastError, WAIT_MARGIN_MS, isHoldfastError, isSessionEvent, units, type Hold } from "../src/index.js";
import { HoldRequestSchema, HoldResponseSchema, ResponseSchema, type Request, type Response } from "../src/gen/holdfast/v1/holdfast_pb.js";
import { encodeFrame } from "../src/frame.js";
import { FakeDaemon, okFor, sessionEvent } from "./fake-daemon.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TESTDATA = new URL("../../../../protos/testdata/", import.meta.url);
const golden = (name: string): Record<string, JsonValue> =>
  (JSON.parse(readFileSync(new URL("manifest.json", TESTDATA), "utf8")) as { name: string; json: Record<string, JsonValue> }[]).find(
    (c) => c.name === name,
  )!.json;

let daemon: FakeDaemon;
let path: string;
let fence: bigint;

/** okFor, but every hold gets a fence of its own (1, 2, ...). */
function withFences(req: Request): Response {
  const resp = okFor(req);
  if (req.method.case === "hold") {
    fence++;
    resp.result = { case: "hold", value: create(HoldResponseSchema, { token: `${fence}.fake`, fence, ttlMs: req.method.value.session ? 5000 : 60000 }) };
  }
  return resp;
}

beforeEach(async () => {
  path = join(mkdtempSync(join(tmpdir(), "hf-ts-")), "hf.sock");
  daemon = await new FakeDaemon(path).start();
  fence = 0n;
  daemon.handler = withFences;
});

afterEach(async () => {
  await daemon.stop();
  rmSync(dirname(path), { recursive: true, force: true });
});

async function until(cond: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) assert.fail("condition not met in time");
    await sleep(5);
  }
}

test("a session hold sends session and no ttl, as the golden frame", async () => {
  const c = new Client({ socketPath: path, timeoutMs: 2000 });
  const h = await c.hold("seat", "run-2026-12-01-KTX101", ["E7", "E8"], { session: true, correlationId: "sess-1" });
  const req = daemon.requests[0];
  const g = golden("session_hold_request");
  assert.deepEqual(toJson(HoldRequestSchema, req.method.value as never, { useProtoFieldName: true }), g.hold);
  assert.equal(req.correlationId, g.correlation_id);
  assert.ok(h.session && h.active && h.lost === undefined);
  assert.equal(h.ttlMs, 5000);
  const plain = await c.hold("seat", "p", ["E9"]);
  assert.equal(plain.session, false);
  assert.equal((daemon.requests[1].method.value as { session: boolean }).session, false);
  c.close();
});

test("a session hold with a ttlMs is refused before sending", async () => {
  const c = new Client({ socketPath: path });
  await assert.rejects(c.hold("seat", "p", ["E7"], { session: true, ttlMs: 1000 }), (err: unknown) => {
    assert.ok(isHoldfastError(err, Code.INVALID_ARGUMENT));
    assert.equal(err.field, "ttl_ms");
    return true;
  });
  assert.equal(daemon.requests.length, 0);
  c.close();
});

test("a SessionEvent marks exactly its hold lost, runs onLost once, and keeps the connection", async () => {
  const c = new Client({ socketPath: path, timeoutMs: 2000 });
  const calls: [Hold, HoldfastError][] = [];
  const a = await c.hold("seat", "p", ["E7", "E8"], { session: true, onLost: (h, err) => void calls.push([h, err]) });
  const b = await c.hold("seat", "p", ["E9"], { session: true });
  const other = await c.hold("seat", "q", ["E7"], { session: true }); // same ids elsewhere
  assert.equal(a.fence, 1n);
  daemon.sendRaw(
    Buffer.concat([
      encode(sessionEvent({ namespace: "seat", partition: "p", fence: a.fence, ids: ["E7", "E8"], reason: Code.HELD_BY_ANOTHER, resourceId: "E8", message: "held by another token" })),
      // the same again (a duplicate report) and one for a hold nobody has
      encode(sessionEvent({ namespace: "seat", partition: "p", fence: a.fence, reason: Code.NOT_HELD })),
      encode(sessionEvent({ namespace: "seat", partition: "p", fence: 99n, reason: Code.NOT_HELD })),
    ]),
  );
  await until(() => a.lost !== undefined);
  assert.equal(a.lost!.code, Code.HELD_BY_ANOTHER);
  assert.equal(a.lost!.resourceId, "E8");
  assert.match(a.lost!.message, /session hold lost: held by another token/);
  assert.equal(calls.length, 1);
  assert.equal(calls[0][0], a);
  assert.equal(calls[0][1], a.lost);
  assert.equal(b.lost, undefined);
  assert.equal(other.lost, undefined);
  assert.ok(a.active, "a lost hold is still ours to close (its release answers NOT_HELD)");
  // The event did not end the connection.
  assert.ok((await c.health()).ready);
  assert.equal(daemon.connections, 1);
  assert.match(String(a), /session lost=HELD_BY_ANOTHER/);
  assert.deepEqual(JSON.parse(JSON.stringify(a)), {
    namespace: "seat",
    partition: "p",
    target: { kind: "seats", ids: ["E7", "E8"] },
    fence: "1",
    ttlMs: 5000,
    degraded: false,
    correlationId: a.correlationId,
    active: true,
    session: true,
    lost: "HELD_BY_ANOTHER",
  });
  assert.doesNotMatch(inspect(a) + JSON.stringify(a) + String(a.lost), /\d\.fake/);
  // Leaving the scope: the release answers NOT_HELD, which is not an error.
  daemon.handler = (req) =>
    req.method.case === "release" ? create(ResponseSchema, { id: req.id, code: Code.NOT_HELD, message: "not held" }) : withFences(req);
  await a[Symbol.asyncDispose]();
  assert.equal(a.active, false);
  c.close();
});

test("the golden session event reaches its hold", async () => {
  // The frame the daemon's tests produce: two holds lost in one event.
  const bytes = readFileSync(new URL("session_event_response.bin", TESTDATA));
  daemon.handler = (req) => {
    const resp = withFences(req);
    if (req.method.case === "hold") (resp.result.value as { fence: bigint }).fence = 1764412345678901n;
    return resp;
  };
  const c = new Client({ socketPath: path, timeoutMs: 2000 });
  const h = await c.hold("seat", "run-2026-12-01-KTX101", ["E7", "E8"], { session: true });
  daemon.sendRaw(bytes);
  await until(() => h.lost !== undefined);
  assert.equal(h.lost!.code, Code.NOT_HELD);
  assert.equal(h.lost!.resourceId, "E7");
  assert.ok((await c.health()).ready);
  c.close();
});

test("an event that comes before the hold's answer is kept for it", async () => {
  for (const order of ["event first", "event after, same write"]) {
    daemon.handler = (req) => {
      const resp = withFences(req);
      if (req.method.case !== "hold") return resp;
      const ev = sessionEvent({ namespace: "seat", partition: "p", fence, reason: Code.NOT_HELD, resourceId: "E7" });
      return order === "event first" ? [ev, resp] : [resp, ev];
    };
    const c = new Client({ socketPath: path, timeoutMs: 2000 });
    const seen: HoldfastError[] = [];
    const h = await c.hold("seat", "p", ["E7"], { session: true, onLost: (_, err) => void seen.push(err) });
    await until(() => h.lost !== undefined);
    assert.equal(h.lost!.code, Code.NOT_HELD, order);
    assert.equal(seen.length, 1, order);
    c.close();
  }
});

test("the end of the connection marks every session hold lost (UNAVAILABLE)", async () => {
  const c = new Client({ socketPath: path, timeoutMs: 2000 });
  let n = 0;
  const a = await c.hold("seat", "p", ["E7"], { session: true, onLost: () => void n++ });
  const b = await c.hold("seat", "p", ["E8"], { session: true, onLost: () => void n++ });
  const plain = await c.hold("seat", "p", ["E9"]);
  await daemon.stop();
  await until(() => a.lost !== undefined && b.lost !== undefined);
  assert.equal(a.lost!.code, Code.UNAVAILABLE);
  assert.match(a.lost!.message, /connection to holdfastd ended/);
  assert.equal(n, 2);
  assert.equal(plain.lost, undefined);
  // The next call reconnects; the lost holds stay lost, new ones live on the new connection.
  await daemon.start();
  const c2 = await c.hold("seat", "p", ["E7"], { session: true });
  assert.equal(c2.lost, undefined);
  assert.equal(daemon.connections, 2);
  c.close();
  assert.equal(c2.lost!.code, Code.UNAVAILABLE, "closing the client ends its session holds too");
  await c2.close(); // a closed client is not an error when leaving the scope
});

test("a released or confirmed session hold is not reported", async () => {
  const c = new Client({ socketPath: path, timeoutMs: 2000 });
  let n = 0;
  const a = await c.hold("seat", "p", ["E7"], { session: true, onLost: () => void n++ });
  const b = await c.hold("seat", "p", ["E8"], { session: true, onLost: () => void n++ });
  await a.release();
  await b.confirm({ idempotencyKey: "order-1:confirm" });
  daemon.sendRaw(
    encode(
      sessionEvent(
        { namespace: "seat", partition: "p", fence: a.fence, reason: Code.NOT_HELD },
        { namespace: "seat", partition: "p", fence: b.fence, reason: Code.CONFIRMED },
      ),
    ),
  );
  assert.ok((await c.health()).ready);
  c.close();
  assert.equal(n, 0);
  assert.equal(a.lost, undefined);
  assert.equal(b.lost, undefined);
});

test("an onLost that throws is reported as a warning and breaks nothing", async () => {
  const warned = new Promise<Error>((resolve) => process.once("warning", resolve));
  const c = new Client({ socketPath: path, timeoutMs: 2000 });
  const h = await c.hold("seat", "p", ["E7"], {
    session: true,
    onLost: () => {
      throw new Error("callback bug");
    },
  });
  daemon.sendRaw(encode(sessionEvent({ namespace: "seat", partition: "p", fence: h.fence, reason: Code.NOT_HELD })));
  const w = await warned;
  assert.match(w.message, /onLost callback failed .*callback bug/);
  assert.equal(h.lost!.code, Code.NOT_HELD);
  assert.ok((await c.health()).ready);
  c.close();
});

test("a degraded session hold is not bound (nothing was held)", async () => {
  daemon.handler = (req) => {
    const resp = withFences(req);
    resp.degraded = true;
    return resp;
  };
  const c = new Client({ socketPath: path, timeoutMs: 2000 });
  const h = await c.hold("product-modify", "p", ["10001"], { session: true });
  assert.ok(h.degraded);
  assert.equal(h.session, false);
  c.close();
  assert.equal(h.lost, undefined);
});

test("other id-0 frames stay fatal, and end the session holds", async () => {
  const c = new Client({ socketPath: path, timeoutMs: 2000 });
  const h = await c.hold("seat", "p", ["E7"], { session: true });
  assert.ok(isSessionEvent(sessionEvent({ namespace: "seat", partition: "p", fence: 1n, reason: Code.NOT_HELD })));
  assert.ok(!isSessionEvent(create(ResponseSchema, { id: 0n, code: Code.OK })));
  daemon.handler = (req) =>
    req.method.case === "health" ? create(ResponseSchema, { id: 0n, code: Code.INVALID_ARGUMENT, message: "undecodable request frame" }) : withFences(req);
  await assert.rejects(c.health(), (err: unknown) => isHoldfastError(err, Code.INVALID_ARGUMENT));
  await until(() => h.lost !== undefined);
  assert.equal(h.lost!.code, Code.UNAVAILABLE);
  c.close();
});

// ---- waiting in line ---------------------------------------------------------

test("wait goes out as wait_ms, as the golden frame, with a deadline beyond it", async () => {
  const c = new Client({ socketPath: path, timeoutMs: 2000 });
  await c.hold("seat", "run-2026-12-01-KTX101", ["E7"], { ttlMs: 60_000, wait: 3000, correlationId: "wait-1" });
  const req = daemon.requests[0];
  assert.deepEqual(toJson(HoldRequestSchema, req.method.value as never, { useProtoFieldName: true }), golden("waiting_hold_request").hold);
  // The client's default (2000) is too short for a 3000 ms wait.
  assert.ok(req.timeoutMs > 3000 + WAIT_MARGIN_MS - 100 && req.timeoutMs <= 3000 + WAIT_MARGIN_MS, `timeout_ms ${req.timeoutMs}`);

  await c.hold("seat", "p", ["E8"], { wait: 500, timeoutMs: 10_000 }); // a longer deadline is kept
  assert.ok(daemon.requests[1].timeoutMs > 9900, `timeout_ms ${daemon.requests[1].timeoutMs}`);
  await c.hold("seat", "p", ["E9"]); // no wait: as before
  assert.equal((daemon.requests[2].method.value as { waitMs: number }).waitMs, 0);
  assert.ok(daemon.requests[2].timeoutMs <= 2000);
  await c.hold("seat", "p", ["E10"], { wait: 10.2, session: true });
  assert.equal((daemon.requests[3].method.value as { waitMs: number }).waitMs, 11);

  await assert.rejects(c.hold("seat", "p", ["E7"], { wait: -1 }), RangeError);
  await assert.rejects(c.hold("seat", "p", ["E7"], { wait: Number.NaN }), RangeError);
  assert.equal(daemon.requests.length, 4);
  c.close();
});

test("the client waits as long as the daemon may (wait + margin), not its default deadline", async () => {
  // The peer answers a waiting hold late, as a daemon does when the holder
  // releases near the end of the wait.
  daemon.handler = (req) => {
    setTimeout(() => daemon.sendRaw(encode(withFences(req))), 700);
    return null;
  };
  const c = new Client({ socketPath: path, timeoutMs: 300 });
  const h = await c.hold("seat", "p", ["E7"], { wait: 600 });
  assert.equal(h.fence, 1n);
  const u = await c.hold("ga", "p", units({ adult: 1 }), { wait: 600 });
  assert.equal(u.fence, 2n);
  assert.equal((daemon.requests[1].method.value as { waitMs: number }).waitMs, 600);
  // Without a wait the default deadline applies.
  await assert.rejects(c.hold("seat", "p", ["E8"]), (err: unknown) => isHoldfastError(err, Code.DEADLINE_EXCEEDED));
  c.close();
});

function encode(resp: Response): Buffer {
  return encodeFrame(ResponseSchema, resp);
}
