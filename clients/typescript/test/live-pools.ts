// Live tests of pools (docs/pools.md) in the test stack's `ga` namespace
// (kind "pools", confirmable; present when the stack has PostgreSQL), run
// from live.test.ts so they share its stack.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test, type TestContext } from "node:test";

import { Client, Code, isHoldfastError, units, type Hold, type HoldfastError } from "../src/index.js";
import type { Stack } from "./stack.js";

const NS = "ga";
const newShow = () => `ts-show-${randomUUID().replaceAll("-", "").slice(0, 12)}`;
const newKey = (what: string) => `ts-${what}-${randomUUID().replaceAll("-", "").slice(0, 12)}`;

async function rejectsWith(p: Promise<unknown>, ...codes: Code[]): Promise<HoldfastError> {
  try {
    await p;
  } catch (err) {
    assert.ok(isHoldfastError(err, ...codes), `expected ${codes.map((c) => Code[c]).join("|")}, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected rejection with ${codes.map((c) => Code[c]).join("|")}`);
}

export function livePoolTests(ctx: () => { stack: Stack; client: Client }): void {
  const track = (h: Hold) => {
    ctx().stack.tokens.push(h.token);
    return h;
  };

  /** False (and the test skipped) when the stack has no pools namespace (no PostgreSQL). */
  async function havePools(t: TestContext): Promise<boolean> {
    try {
      await ctx().client.getCapacity(NS, "probe");
      return true;
    } catch (err) {
      if (isHoldfastError(err, Code.NOT_FOUND, Code.FAILED_PRECONDITION, Code.UNIMPLEMENTED)) {
        t.skip(`the stack has no pools namespace '${NS}': ${err.message}`);
        return false;
      }
      throw err;
    }
  }

  test("pools: capacities are set and read in PostgreSQL; never below what is sold", async (t) => {
    if (!(await havePools(t))) return;
    const { client } = ctx();
    const show = newShow();
    assert.deepEqual(await client.admin.setCapacity(NS, show, "adult", 5), { pool: "adult", capacity: 5, sold: 0, partitionDefault: false });
    const def = await client.admin.setDefaultCapacity(NS, show, 1);
    assert.equal(def.capacity, 1);
    assert.equal(def.pool, "");
    const caps = await client.getCapacity(NS, show, ["adult", "user-17"]);
    assert.equal(caps.defaultCapacity, 1);
    assert.deepEqual(caps.pools, [
      { pool: "adult", capacity: 5, sold: 0, partitionDefault: false },
      { pool: "user-17", capacity: 1, sold: 0, partitionDefault: true },
    ]);
    // Raised and lowered at will while nothing is sold; an absolute value, so a retry is harmless.
    assert.equal((await client.admin.setCapacity(NS, show, "adult", 3)).capacity, 3);
    assert.equal((await client.admin.setCapacity(NS, show, "adult", 3)).capacity, 3);

    const h = track(await client.hold(NS, show, units({ adult: 2 }), { ttlMs: 30_000 }));
    await h.confirm({ idempotencyKey: newKey("cap"), reference: "order-cap" });
    const err = await rejectsWith(client.admin.setCapacity(NS, show, "adult", 1), Code.FAILED_PRECONDITION);
    assert.equal(err.field, "capacity");
    assert.equal(err.resourceId, "adult");
    assert.deepEqual((await client.getCapacity(NS, show, ["adult"])).pools[0], { pool: "adult", capacity: 3, sold: 2, partitionDefault: false });
    await rejectsWith(client.hold(NS, "bad partition", units({ adult: 1 })), Code.INVALID_ARGUMENT);
    await rejectsWith(client.hold("seat", show, units({ adult: 1 })), Code.INVALID_ARGUMENT); // a seats namespace
  });

  test("pools: a hold takes every pool or none; status, extend, release", async (t) => {
    if (!(await havePools(t))) return;
    const { stack, client } = ctx();
    const show = newShow();
    await client.admin.setCapacity(NS, show, "adult", 3);
    await client.admin.setCapacity(NS, show, "child", 1);
    const a = track(await client.hold(NS, show, units({ adult: 2, child: 1 }), { ttlMs: 30_000 }));
    assert.ok(a.active && a.fence > 0n && a.ttlMs === 30_000);
    assert.deepEqual(a.target, units({ adult: 2, child: 1 }));

    const other = new Client({ socketPath: stack.socket, timeoutMs: 5000 });
    try {
      // The adult unit is free, the child unit is not: nothing is taken.
      const err = await rejectsWith(other.hold(NS, show, units({ adult: 1, child: 1 }), { ttlMs: 30_000 }), Code.HELD_BY_ANOTHER);
      assert.equal(err.resourceId, "child");
    } finally {
      other.close();
    }
    const st = (await a.status()).pools;
    assert.deepEqual(
      st.map((s) => [s.pool, s.capacity, s.sold, s.held, s.free, s.owned]),
      [
        ["adult", 3, 0, 2, 1, 2],
        ["child", 1, 0, 1, 0, 1],
      ],
    );
    assert.ok(st.every((s) => s.ttlMs > 0 && s.ttlMs <= 30_000));
    const anon = (await client.status(NS, show, units(["adult"]))).pools;
    assert.equal(anon[0].owned, 0);

    assert.equal(await a.extend(60_000), 60_000);
    assert.ok((await a.status()).pools.every((s) => s.ttlMs > 30_000));
    assert.equal(await a.release(), 3);
    assert.equal(a.active, false);
    assert.deepEqual(
      (await client.status(NS, show, units(["adult", "child"]))).pools.map((s) => [s.held, s.free]),
      [
        [0, 3],
        [0, 1],
      ],
    );
    await rejectsWith(a.extend(1000), Code.NOT_HELD);

    // await using gives the units back at the end of the scope.
    {
      await using b = await client.hold(NS, show, units([["child", 1]]));
      track(b);
      assert.equal((await client.status(NS, show, units(["child"]))).pools[0].held, 1);
    }
    assert.equal((await client.status(NS, show, units(["child"]))).pools[0].held, 0);
  });

  test("pools: confirm, replay, sold out, cancel", async (t) => {
    if (!(await havePools(t))) return;
    const { client } = ctx();
    const show = newShow();
    await client.admin.setCapacity(NS, show, "adult", 2);
    const h = track(await client.hold(NS, show, units({ adult: 2 }), { ttlMs: 30_000 }));
    const key = newKey("confirm");
    const order = `order-${randomUUID().slice(0, 8)}`;
    const first = await h.confirm({ idempotencyKey: key, reference: order, payload: new TextEncoder().encode('{"tickets":2}') });
    assert.equal(first.replayed, false);
    assert.equal(first.fence, h.fence);
    assert.deepEqual({ ...first.units }, { adult: 2 });
    assert.ok(first.confirmedAtUnixMs > Date.now() - 60_000);
    // A retry with the same key (e.g. after a timeout) answers the same and sells nothing.
    const again = await client.resume(NS, show, units({ adult: 2 }), h.token).confirm({
      idempotencyKey: key,
      reference: order,
      payload: new TextEncoder().encode('{"tickets":2}'),
    });
    assert.equal(again.replayed, true);
    assert.deepEqual({ ...again.units }, { adult: 2 });
    assert.equal((await client.getCapacity(NS, show, ["adult"])).pools[0].sold, 2);
    await h.close(); // confirmed: nothing to release

    // Sold out: no unit left unsold.
    const soldOut = await rejectsWith(client.hold(NS, show, units({ adult: 1 })), Code.CONFIRMED);
    assert.equal(soldOut.resourceId, "adult");

    // Cancel gives back units sold under the order, all or none.
    const ckey = newKey("refund");
    const c1 = await client.cancel(NS, show, units({ adult: 1 }), { idempotencyKey: ckey, reference: order });
    assert.equal(c1.cancelled, 1);
    assert.equal(c1.replayed, false);
    assert.deepEqual({ ...c1.units }, { adult: 1 });
    const c2 = await client.cancel(NS, show, units({ adult: 1 }), { idempotencyKey: ckey, reference: order });
    assert.equal(c2.replayed, true);
    const tooMany = await rejectsWith(client.cancel(NS, show, units({ adult: 5 }), { idempotencyKey: newKey("refund"), reference: order }), Code.NOT_FOUND);
    assert.equal(tooMany.resourceId, "adult");
    assert.equal((await client.getCapacity(NS, show, ["adult"])).pools[0].sold, 1);
    // The unit given back can be sold again.
    const h2 = track(await client.hold(NS, show, units({ adult: 1 }), { ttlMs: 5000 }));
    await rejectsWith(client.hold(NS, show, units({ adult: 1 })), Code.HELD_BY_ANOTHER);
    await h2.release();
    // A confirm must name exactly the units held.
    const h3 = track(await client.hold(NS, show, units({ adult: 1 }), { ttlMs: 5000 }));
    await rejectsWith(client.resume(NS, show, units({ adult: 2 }), h3.token).confirm({ idempotencyKey: newKey("bad") }), Code.INVALID_ARGUMENT);
    await h3.release();
  });
}
