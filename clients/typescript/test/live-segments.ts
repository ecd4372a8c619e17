// Live tests of journey segments and of strings holding NUL bytes, against
// the real daemon; registered inside live.test.ts's suite (same stack, run in
// order with the tests that restart the daemon).
//
// Segments (docs/segments.md): the test stack's `train` namespace
// (tools/devstack.sh) has max_legs = 8, so every request there names a
// segment and acts on legs fromStop .. toStop - 1; answers name a leg
// "<id>@<leg>".
//
// NUL: the daemon refuses any string field holding a NUL byte (or invalid
// UTF-8) with INVALID_ARGUMENT naming the field, before anything is written.
// JavaScript strings carry NUL freely and this client sends them as they are.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";

import { Client, Code, HoldfastError, ResourceState, isHoldfastError, seats, type Hold } from "../src/index.js";
import type { Stack } from "./stack.js";

const TRAIN = "train";
const SEAT = "seat";
const { FREE, HELD, CONFIRMED } = ResourceState;
const newPartition = () => `ts-${randomUUID().replaceAll("-", "").slice(0, 16)}`;
const seg = (fromStop: number, toStop: number) => ({ fromStop, toStop });

async function rejectsWith(p: Promise<unknown>, code: Code): Promise<HoldfastError> {
  try {
    await p;
  } catch (err) {
    assert.ok(isHoldfastError(err, code), `expected ${Code[code]}, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected rejection with ${Code[code]}`);
}

export function liveSegmentAndStringTests(env: () => { stack: Stack; client: Client }): void {
  const track = (h: Hold) => {
    env().stack.tokens.push(h.token);
    return h;
  };
  const legs = async (p: string, seat: string, from: number, to: number) =>
    Object.fromEntries((await env().client.status(TRAIN, p, seats([seat], seg(from, to)))).resources.map((s) => [s.id, s.state]));
  const claimed = (r: { claims: { resourceId: string }[] }) => r.claims.map((c) => c.resourceId).sort();

  test("segments: adjacent segments of one seat sell to two travellers", async () => {
    const { client } = env();
    const p = newPartition();
    // Seoul (0) -> Daejeon (2) for Alice, Daejeon (2) -> Busan (4) for Bob.
    await using alice = track(await client.hold(TRAIN, p, seats(["E7"], seg(0, 2)), { ttlMs: 30000 }));
    await using bob = track(await client.hold(TRAIN, p, seats(["E7"], seg(2, 4)), { ttlMs: 30000 }));
    assert.deepEqual(alice.target, seats(["E7"], seg(0, 2)));
    const mine = (await alice.status()).resources;
    assert.deepEqual(mine.map((s) => [s.id, s.state, s.owned]), [["E7@0", HELD, true], ["E7@1", HELD, true]]);
    assert.equal(await alice.extend(60000), 60000);
    const a = await alice.confirm({ idempotencyKey: `alice-${p}`, reference: "order-a" });
    const b = await bob.confirm({ idempotencyKey: `bob-${p}`, reference: "order-b" });
    assert.deepEqual(claimed(a), ["E7@0", "E7@1"]);
    assert.deepEqual(claimed(b), ["E7@2", "E7@3"]);
    assert.deepEqual(await legs(p, "E7", 0, 6), {
      "E7@0": CONFIRMED, "E7@1": CONFIRMED, "E7@2": CONFIRMED, "E7@3": CONFIRMED, "E7@4": FREE, "E7@5": FREE,
    });
  });

  test("segments: an overlapping hold is refused naming the leg", async () => {
    const { stack, client } = env();
    const p = newPartition();
    const other = new Client({ socketPath: stack.socket, timeoutMs: 5000 });
    try {
      const carol = track(await client.hold(TRAIN, p, seats(["E7"], seg(0, 2)), { ttlMs: 30000 }));
      // 1 -> 3 shares leg 1 with Carol's hold.
      const held = await rejectsWith(other.hold(TRAIN, p, seats(["E7"], seg(1, 3)), { ttlMs: 30000 }), Code.HELD_BY_ANOTHER);
      assert.equal(held.resourceId, "E7@1");
      assert.deepEqual(await legs(p, "E7", 2, 3), { "E7@2": FREE }); // all or nothing
      await carol.confirm({ idempotencyKey: `carol-${p}`, reference: "order-c" });
      const sold = await rejectsWith(other.hold(TRAIN, p, seats(["E7"], seg(1, 3)), { ttlMs: 30000 }), Code.CONFIRMED);
      assert.equal(sold.resourceId, "E7@1");
      const dave = track(await other.hold(TRAIN, p, seats(["E7"], seg(2, 3)), { ttlMs: 30000 })); // the next trip
      await dave.close();
    } finally {
      other.close();
    }
  });

  test("segments: a cancel frees only its legs", async () => {
    const { client } = env();
    const p = newPartition();
    for (const [name, from, to] of [["trip-1", 0, 2], ["trip-2", 2, 4]] as const) {
      await using h = track(await client.hold(TRAIN, p, seats(["B2"], seg(from, to)), { ttlMs: 30000 }));
      await h.confirm({ idempotencyKey: `${name}-${p}`, reference: `order-${name}` });
    }
    // The reference is the one the confirm was made with.
    const r = await client.cancel(TRAIN, p, seats(["B2"], seg(0, 2)), { idempotencyKey: `refund-${p}`, reference: "order-trip-1" });
    assert.equal(r.cancelled, 2);
    assert.equal(r.replayed, false);
    assert.deepEqual(await legs(p, "B2", 0, 4), { "B2@0": FREE, "B2@1": FREE, "B2@2": CONFIRMED, "B2@3": CONFIRMED });
    const again = track(await client.hold(TRAIN, p, seats(["B2"], seg(0, 2)), { ttlMs: 30000 }));
    await again.close();
    const sold = await rejectsWith(client.hold(TRAIN, p, seats(["B2"], seg(1, 3)), { ttlMs: 30000 }), Code.CONFIRMED);
    assert.equal(sold.resourceId, "B2@2");
  });

  test("segments: leaving the scope releases the hold's legs", async () => {
    const { client } = env();
    const p = newPartition();
    {
      await using h = track(await client.hold(TRAIN, p, seats(["C3", "C4"], seg(5, 8)), { ttlMs: 30000 }));
      assert.deepEqual(h.target, seats(["C3", "C4"], seg(5, 8)));
      assert.deepEqual(await legs(p, "C4", 4, 8), { "C4@4": FREE, "C4@5": HELD, "C4@6": HELD, "C4@7": HELD });
    }
    for (const seat of ["C3", "C4"]) {
      assert.ok(Object.values(await legs(p, seat, 5, 8)).every((s) => s === FREE), seat);
    }
    const h2 = track(await client.hold(TRAIN, p, seats(["C3"], seg(0, 3)), { ttlMs: 30000 }));
    assert.equal(await h2.release(), 3); // one per leg
  });

  test("segments: required with legs, refused elsewhere", async () => {
    const { client } = env();
    const p = newPartition();
    for (const [ns, segment] of [[TRAIN, undefined], [SEAT, seg(0, 1)], [TRAIN, seg(3, 2)]] as const) {
      const e = await rejectsWith(client.hold(ns, p, seats(["E7"], segment), { ttlMs: 30000 }), Code.INVALID_ARGUMENT);
      assert.equal(e.field, "segment", `${ns} ${JSON.stringify(segment)}`);
    }
  });

  const seatState = async (p: string, id: string) => {
    const st = (await env().client.status(SEAT, p, seats([id]))).resources;
    assert.deepEqual(st.map((s) => s.id), [id]);
    return st[0]!.state;
  };

  test("NUL: a hold with a NUL in an id is refused and takes nothing", async () => {
    const { client } = env();
    const p = newPartition();
    let e = await rejectsWith(client.hold(SEAT, p, ["E\u00007"], { ttlMs: 30000 }), Code.INVALID_ARGUMENT);
    assert.equal(e.field, "ids[0]");
    e = await rejectsWith(client.hold(SEAT, p, ["F1", "E\u00007"], { ttlMs: 30000 }), Code.INVALID_ARGUMENT);
    assert.equal(e.field, "ids[1]");
    // Not cut at the NUL ("E"), and nothing else of the request taken.
    for (const id of ["E", "7", "F1"]) assert.equal(await seatState(p, id), FREE, id);
  });

  test("NUL: a confirm with a NUL in its idempotency key is refused", async () => {
    const { client } = env();
    const p = newPartition();
    const key = `order-${p}`;
    await using h = track(await client.hold(SEAT, p, ["E"], { ttlMs: 30000 }));
    const e = await rejectsWith(h.confirm({ idempotencyKey: `${key}\u0000x`, reference: "order-1" }), Code.INVALID_ARGUMENT);
    assert.equal(e.field, "idempotency_key");
    // Nothing written: still held by this hold, not sold ...
    assert.deepEqual((await h.status()).resources.map((s) => [s.state, s.owned]), [[HELD, true]]);
    // ... and the key cut at the NUL was never stored: a confirm under it is a first one.
    const conf = await h.confirm({ idempotencyKey: key, reference: "order-1" });
    assert.equal(conf.replayed, false);
    assert.deepEqual(claimed(conf), ["E"]);
  });

  test("NUL: a cancel with a NUL in its reference is refused", async () => {
    const { client } = env();
    const p = newPartition();
    {
      await using h = track(await client.hold(SEAT, p, ["E"], { ttlMs: 30000 }));
      await h.confirm({ idempotencyKey: `order-${p}`, reference: "order-1" });
    }
    const refund = `refund-${p}`;
    const e = await rejectsWith(client.cancel(SEAT, p, ["E"], { idempotencyKey: refund, reference: "order-1\u0000x" }), Code.INVALID_ARGUMENT);
    assert.equal(e.field, "reference");
    assert.equal(await seatState(p, "E"), CONFIRMED);
    // The refused cancel stored nothing under its key: the real one is not a replay.
    const r = await client.cancel(SEAT, p, ["E"], { idempotencyKey: refund, reference: "order-1" });
    assert.equal(r.cancelled, 1);
    assert.equal(r.replayed, false);
    assert.equal(await seatState(p, "E"), FREE);
  });
}
