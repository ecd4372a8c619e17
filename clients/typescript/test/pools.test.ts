// Pools on the wire, against the scripted peer: every call sends what the
// golden frames of protos/testdata/ hold (through the deprecated names too),
// a units Hold carries its target to extend, release, confirm, status and
// close, and answers map to plain numbers. The daemon's side is in live-pools.ts (run from live.test.ts).

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import { inspect } from "node:util";

import { create, toJson, type JsonValue } from "@bufbuild/protobuf";
import { Client, Code, Hold, HoldfastError, PoolHold, isHoldfastError, units, withHold, withHoldUnits, type PoolConfirmResult } from "../src/index.js";
import { ErrorDetailSchema, HoldResponseSchema, RequestSchema, ResponseSchema, type Request } from "../src/gen/holdfast/v1/holdfast_pb.js";
import { FakeDaemon, okFor } from "./fake-daemon.js";

const TESTDATA = new URL("../../../../protos/testdata/", import.meta.url);
const MANIFEST = JSON.parse(readFileSync(new URL("manifest.json", TESTDATA), "utf8")) as { name: string; json: Record<string, JsonValue> }[];
const golden = (name: string) => MANIFEST.find((c) => c.name === name)!.json;
const TOKEN = "1764412345678908.Zm9vYmFyYmF6cXV4MTIzNA"; // the golden frames' token
const SHOW = "show-2026-12-24-2000";

let daemon: FakeDaemon;
let path: string;

beforeEach(async () => {
  path = join(mkdtempSync(join(tmpdir(), "hf-ts-")), "hf.sock");
  daemon = await new FakeDaemon(path).start();
  daemon.handler = (req) => {
    const resp = okFor(req);
    if (req.method.case === "hold") {
      resp.result = { case: "hold", value: create(HoldResponseSchema, { token: TOKEN, fence: 1764412345678908n, ttlMs: req.method.value.ttlMs || 60000 }) };
    }
    return resp;
  };
});

afterEach(async () => {
  await daemon.stop();
  rmSync(dirname(path), { recursive: true, force: true });
});

/** The method part of a request as proto JSON, as the manifest has it. */
function wire(req: Request): JsonValue {
  const json = toJson(RequestSchema, req, { useProtoFieldName: true }) as Record<string, JsonValue>;
  for (const k of ["id", "correlation_id", "timeout_ms", "traceparent"]) delete json[k];
  return json;
}
function goldenMethod(name: string): JsonValue {
  const json = { ...golden(name) };
  for (const k of ["id", "correlation_id", "timeout_ms", "traceparent"]) delete json[k];
  return json;
}

const POOL_GOLDEN = [
  "pool_hold_request",
  "pool_extend_request",
  "pool_status_request",
  "pool_confirm_request",
  "pool_release_request",
  "pool_cancel_request",
  "set_capacity_request",
  "set_capacity_default_request",
  "get_capacity_request",
];

test("every pool call sends what its golden frame holds", async () => {
  const c = new Client({ socketPath: path, timeoutMs: 2000 });
  const h = await c.hold("ga", SHOW, units({ adult: 2, child: 1 }), { ttlMs: 120_000 });
  await h.extend(300_000);
  await h.status();
  const result = await h.confirm({ idempotencyKey: "order-4712:confirm", reference: "order-4712", payload: new TextEncoder().encode('{"tickets":3}') });
  await c.resume("ga", SHOW, units(["adult", "child"]), TOKEN).release();
  await c.cancel("ga", SHOW, units({ adult: 1 }), { idempotencyKey: "order-4712:refund-1", reference: "order-4712" });
  await c.admin.setCapacity("ga", SHOW, "adult", 5000);
  await c.admin.setDefaultCapacity("coupon", "batch-7", 1);
  await c.getCapacity("ga", SHOW, ["adult", "user-17"]);
  assert.equal(daemon.requests.length, POOL_GOLDEN.length);
  POOL_GOLDEN.forEach((name, i) => assert.deepEqual(wire(daemon.requests[i]), goldenMethod(name), name));
  // Confirmed: leaving the scope sends nothing more.
  await h.close();
  assert.equal(daemon.requests.length, POOL_GOLDEN.length);
  assert.deepEqual({ ...result.units }, { adult: 2, child: 1 });
  assert.deepEqual(result.claims, []);
  assert.equal(result.fence, 1n);
  assert.equal(result.confirmedAtUnixMs, 1764412399456);
  assert.deepEqual(JSON.parse(JSON.stringify(result)), {
    fence: "1",
    replayed: false,
    claims: [],
    units: { adult: 2, child: 1 },
    confirmedAtUnixMs: 1764412399456,
  });
  c.close();
});

test("the deprecated pool names send the same golden frames", async () => {
  const c = new Client({ socketPath: path, timeoutMs: 2000 });
  const h = await c.holdUnits("ga", SHOW, { adult: 2, child: 1 }, { ttlMs: 120_000 });
  assert.ok(h instanceof PoolHold && h instanceof Hold);
  await c.extendUnits("ga", SHOW, h.pools, TOKEN, { ttlMs: 300_000 });
  assert.deepEqual(await c.poolStatus("ga", SHOW, ["adult", "child"], { token: TOKEN }), (await h.status()).pools);
  daemon.requests.pop(); // the replacement's own status
  const result: PoolConfirmResult = await c.confirmUnits("ga", SHOW, h.units, TOKEN, {
    idempotencyKey: "order-4712:confirm",
    reference: "order-4712",
    payload: new TextEncoder().encode('{"tickets":3}'),
  });
  await c.releaseUnits("ga", SHOW, ["adult", "child"], TOKEN);
  await c.cancelUnits("ga", SHOW, { adult: 1 }, { idempotencyKey: "order-4712:refund-1", reference: "order-4712" });
  await c.setCapacity("ga", SHOW, "adult", 5000);
  await c.setDefaultCapacity("coupon", "batch-7", 1);
  await c.getCapacity("ga", SHOW, ["adult", "user-17"]);
  POOL_GOLDEN.forEach((name, i) => assert.deepEqual(wire(daemon.requests[i]), goldenMethod(name), name));
  assert.deepEqual({ ...result.units }, { adult: 2, child: 1 });
  c.close();
});

test("a units hold: its target, ttl, scope exit, never its token", async () => {
  const c = new Client({ socketPath: path, timeoutMs: 2000 });
  {
    await using h = await c.hold("ga", SHOW, units(new Map([["adult", 2], ["child", 1]])));
    assert.ok(h instanceof Hold);
    assert.deepEqual(h.target, { kind: "units", units: { adult: 2, child: 1 }, pools: ["adult", "child"] });
    assert.equal(h.fence, 1764412345678908n);
    assert.equal(h.ttlMs, 60000);
    assert.equal(h.token, TOKEN);
    assert.equal(h.session, false);
    assert.equal(String(h), "Hold(ga/show-2026-12-24-2000 [adult=2,child=1] fence=1764412345678908)");
    assert.deepEqual(JSON.parse(JSON.stringify(h)), {
      namespace: "ga",
      partition: SHOW,
      target: { kind: "units", units: { adult: 2, child: 1 }, pools: ["adult", "child"] },
      fence: "1764412345678908",
      ttlMs: 60000,
      degraded: false,
      correlationId: h.correlationId,
      active: true,
    });
    assert.doesNotMatch(inspect(h) + JSON.stringify(h) + String(h), /Zm9v/);
    const st = await h.status();
    assert.deepEqual(st.resources, []);
    assert.deepEqual(st.pools[0], { pool: "adult", capacity: 5000, sold: 4990, held: 7, free: 3, owned: 2, ttlMs: 118250 });
  }
  const release = daemon.requests.at(-1)!;
  assert.equal(release.method.case, "release");
  assert.deepEqual((release.method.value as { pools: string[] }).pools, ["adult", "child"]);
  assert.equal(release.correlationId, daemon.requests[0].correlationId);

  // [pool, count] pairs and withHold (and its deprecated name for units)
  assert.equal(await withHold(c, "ga", SHOW, units([["adult", 1]]), { ttlMs: 5000 }, async (h) => h.release()), 1);
  assert.equal(await withHoldUnits(c, "ga", SHOW, [["adult", 1]], { ttlMs: 5000 }, async (h) => h.release()), 1);
  c.close();
});

test("targets are checked before sending", async () => {
  const c = new Client({ socketPath: path });
  assert.throws(() => units("adult" as never), TypeError);
  assert.throws(() => units({ adult: 1.5 }), RangeError);
  assert.throws(() => units({ adult: -1 }), RangeError);
  assert.throws(() => units({ adult: "2" as never }), RangeError);
  assert.throws(() => units([["adult"]] as never), TypeError);
  assert.throws(() => units([["adult", 1], ["adult", 2]]), RangeError); // a pool twice
  await assert.rejects(c.hold("ga", "p", { kind: "pools" } as never), TypeError);
  await assert.rejects(c.hold("ga", "p", units(["adult"])), TypeError); // names only serve status
  await assert.rejects(c.hold("ga", "p", units({ adult: 1 }), { session: true }), (err: unknown) => isHoldfastError(err, Code.INVALID_ARGUMENT));
  await assert.rejects(c.status("ga", "p", "adult" as never), TypeError);
  await assert.rejects(c.admin.setCapacity("ga", "p", "adult", -1), RangeError);
  await assert.rejects(c.admin.setCapacity("ga", "p", "", 1), TypeError);
  await assert.rejects(c.resume("ga", "p", units({ adult: 1 }), TOKEN).confirm({ idempotencyKey: "" }), (err: unknown) =>
    isHoldfastError(err, Code.INVALID_ARGUMENT),
  );
  await assert.rejects(c.cancel("ga", "p", units({ adult: 1 }), { idempotencyKey: "" }), (err: unknown) => isHoldfastError(err, Code.INVALID_ARGUMENT));
  // The deprecated names check the same, and reject as they did.
  await assert.rejects(c.holdUnits("ga", "p", { adult: 1.5 }), RangeError);
  await assert.rejects(c.poolStatus("ga", "p", "adult" as never), TypeError);
  await assert.rejects(c.setCapacity("ga", "p", "", 1), TypeError);
  assert.equal(daemon.requests.length, 0);
  c.close();
});

test("answers map to numbers; refusals name the pool", async () => {
  const c = new Client({ socketPath: path });
  const caps = await c.getCapacity("ga", SHOW, ["adult", "user-17"]);
  assert.deepEqual(caps, {
    pools: [
      { pool: "adult", capacity: 5000, sold: 4990, partitionDefault: false },
      { pool: "user-17", capacity: 1, sold: 1, partitionDefault: true },
    ],
    defaultCapacity: 1,
  });
  assert.deepEqual(await c.admin.setCapacity("ga", SHOW, "adult", 5000), { pool: "adult", capacity: 5000, sold: 4990, partitionDefault: false });
  const cancel = await c.cancel("ga", SHOW, units({ adult: 1, child: 2 }), { idempotencyKey: "k", reference: "r" });
  assert.deepEqual({ ...cancel, units: { ...cancel.units } }, { cancelled: 3, replayed: false, units: { adult: 1, child: 2 } });
  assert.equal(await c.resume("ga", SHOW, units(["adult"]), TOKEN).extend(1000), 1000);

  for (const [code, pool] of [
    [Code.HELD_BY_ANOTHER, "child"],
    [Code.CONFIRMED, "adult"],
  ] as const) {
    daemon.handler = (req) =>
      create(ResponseSchema, { id: req.id, correlationId: req.correlationId, code, message: "no", error: create(ErrorDetailSchema, { resourceId: pool }) });
    await assert.rejects(c.hold("ga", SHOW, units({ adult: 2, child: 1 })), (err: unknown) => {
      assert.ok(err instanceof HoldfastError);
      assert.equal(err.code, code);
      assert.equal(err.resourceId, pool);
      return true;
    });
  }
  daemon.handler = (req) =>
    create(ResponseSchema, {
      id: req.id,
      code: Code.FAILED_PRECONDITION,
      message: "below sold",
      error: create(ErrorDetailSchema, { field: "capacity", resourceId: "adult" }),
    });
  await assert.rejects(c.admin.setCapacity("ga", SHOW, "adult", 4000), (err: unknown) => {
    assert.ok(isHoldfastError(err, Code.FAILED_PRECONDITION));
    assert.equal(err.field, "capacity");
    assert.equal(err.resourceId, "adult");
    return true;
  });
  c.close();
});
