// Live tests of the one surface: seats, legs of seats and units of pools go
// through the same calls (hold -> extend -> status -> confirm -> cancel), and
// a hold is carried on by a second Client from its token alone
// (client.resume). Run from live.test.ts so they share its stack.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test, type TestContext } from "node:test";

import { Client, Code, ResourceState, isHoldfastError, seats, units, type StatusResult, type Target } from "../src/index.js";
import type { Stack } from "./stack.js";

const uid = () => randomUUID().replaceAll("-", "").slice(0, 12);

interface Kind {
  name: string;
  namespace: string;
  target: Target;
  /** What a status shows of the target: [name, held or sold, owned by the token asked with]. */
  seen: (st: StatusResult) => [string, string, boolean][];
  /** Claims for seats and legs, units for pools. */
  sold: (r: { claims: { resourceId: string }[]; units: Record<string, number> }) => unknown;
  expectSold: unknown;
}

const bySeat = (st: StatusResult) => st.resources.map((r): [string, string, boolean] => [r.id, ResourceState[r.state], r.owned]);

const KINDS: Kind[] = [
  {
    name: "seats",
    namespace: "seat",
    target: seats(["E7", "E8"]),
    seen: bySeat,
    sold: (r) => r.claims.map((c) => c.resourceId).sort(),
    expectSold: ["E7", "E8"],
  },
  {
    name: "segments",
    namespace: "train",
    target: seats(["E7"], { fromStop: 1, toStop: 3 }),
    seen: bySeat,
    sold: (r) => r.claims.map((c) => c.resourceId).sort(),
    expectSold: ["E7@1", "E7@2"],
  },
  {
    name: "units",
    namespace: "ga",
    target: units({ adult: 2, child: 1 }),
    seen: (st) => st.pools.map((p): [string, string, boolean] => [p.pool, `held=${p.held} sold=${p.sold}`, p.owned > 0]),
    sold: (r) => ({ ...r.units }),
    expectSold: { adult: 2, child: 1 },
  },
];

export function liveSurfaceTests(ctx: () => { stack: Stack; client: Client }): void {
  for (const kind of KINDS) {
    test(`surface (${kind.name}): hold, extend, status, resume on a second client, confirm, cancel`, async (t: TestContext) => {
      const { stack, client } = ctx();
      const p = `ts-surface-${uid()}`;
      if (kind.target.kind === "units") {
        try {
          // Exactly what the hold takes: sold, nothing is left to hold.
          for (const pool of kind.target.pools) await client.admin.setCapacity(kind.namespace, p, pool, kind.target.units[pool]);
        } catch (err) {
          if (!isHoldfastError(err, Code.NOT_FOUND, Code.FAILED_PRECONDITION, Code.UNIMPLEMENTED)) throw err;
          t.skip(`the stack has no pools namespace '${kind.namespace}': ${err.message}`);
          return;
        }
      }
      const h = await client.hold(kind.namespace, p, kind.target, { ttlMs: 30_000 });
      stack.tokens.push(h.token);
      assert.equal(h.target, kind.target);
      assert.equal(await h.extend(60_000), 60_000);
      const mine = kind.seen(await h.status());
      assert.ok(mine.length > 0 && mine.every(([, , owned]) => owned), JSON.stringify(mine));

      // Another process (here: another connection) with only the token.
      const second = new Client({ socketPath: stack.socket, timeoutMs: 5000 });
      try {
        const resumed = second.resume(kind.namespace, p, kind.target, h.token);
        assert.equal(resumed.fence, h.fence);
        assert.deepEqual(kind.seen(await resumed.status()), mine);
        const order = `order-${uid()}`;
        const r = await resumed.confirm({ idempotencyKey: `${order}:confirm`, reference: order });
        assert.equal(r.fence, h.fence);
        assert.equal(r.replayed, false);
        assert.ok(r.confirmedAtUnixMs > Date.now() - 60_000, `confirmedAtUnixMs ${r.confirmedAtUnixMs}`);
        assert.deepEqual(kind.sold(r), kind.expectSold);
        assert.equal(resumed.active, false);
        await resumed.close(); // confirmed: nothing to release

        // The first handle does not know; leaving its scope is still quiet.
        await h.close();
        await assert.rejects(client.hold(kind.namespace, p, kind.target), (err: unknown) => isHoldfastError(err, Code.CONFIRMED));

        const c = await second.cancel(kind.namespace, p, kind.target, { idempotencyKey: `${order}:refund`, reference: order });
        assert.equal(c.replayed, false);
        assert.equal(c.cancelled, kind.target.kind === "units" ? 3 : (kind.expectSold as string[]).length); // ids (legs) or units
        if (kind.target.kind === "units") assert.deepEqual({ ...c.units }, kind.expectSold);
        // Given back: for sale again.
        const again = await client.hold(kind.namespace, p, kind.target, { ttlMs: 5000 });
        stack.tokens.push(again.token);
        await again.release();
      } finally {
        second.close();
      }
    });
  }
}
