// Live tests of session holds (docs/sessions.md), run from live.test.ts so
// they share its stack and never run beside its daemon restart. The `seat`
// namespace of the test stack has the default session TTL (5 s).

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";

import { Client, Code, ResourceState, isHoldfastError, type Hold, type HoldfastError } from "../src/index.js";
import type { Stack } from "./stack.js";

const NS = "seat";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const newPartition = () => `ts-s-${randomUUID().replaceAll("-", "").slice(0, 16)}`;

export function liveSessionTests(ctx: () => { stack: Stack; client: Client }): void {
  const track = (h: Hold) => {
    ctx().stack.tokens.push(h.token);
    return h;
  };

  test("session: a session hold is renewed past its TTL while its client is idle", async () => {
    const { stack } = ctx();
    const p = newPartition();
    const c = new Client({ socketPath: stack.socket, timeoutMs: 5000 });
    try {
      const h = track(await c.hold(NS, p, ["S1", "S2"], { session: true }));
      assert.ok(h.session && h.lost === undefined);
      assert.ok(h.ttlMs > 0 && h.ttlMs <= 60_000, `session TTL ${h.ttlMs}`);
      // Idle for more than three session TTLs: only the daemon's renewals keep it.
      await sleep(3 * h.ttlMs + 1000);
      assert.equal(h.lost, undefined);
      const st = (await h.status()).resources;
      assert.deepEqual(st.map((s) => [s.id, s.state, s.owned]), [
        ["S1", ResourceState.HELD, true],
        ["S2", ResourceState.HELD, true],
      ]);
      assert.ok(st.every((s) => s.ttlMs > 0 && s.ttlMs <= h.ttlMs));
      assert.equal(await h.release(), 2);
      assert.ok((await c.status(NS, p, ["S1", "S2"])).resources.every((s) => s.state === ResourceState.FREE));
    } finally {
      c.close();
    }
  });

  test("session: a session hold is freed as soon as its client closes", async () => {
    const { stack, client } = ctx();
    const p = newPartition();
    const holder = new Client({ socketPath: stack.socket, timeoutMs: 5000 });
    const h = track(await holder.hold(NS, p, ["C1"], { session: true }));
    await client.health(); // the bystander is connected before the close
    holder.close();
    const closed = performance.now();
    assert.equal(h.lost?.code, Code.UNAVAILABLE);
    for (;;) {
      try {
        const h2 = track(await client.hold(NS, p, ["C1"], { ttlMs: 5000 }));
        // Well within the session TTL: released on close, not expired.
        assert.ok(performance.now() - closed < 1000, `freed after ${Math.round(performance.now() - closed)} ms`);
        await h2.release();
        break;
      } catch (err) {
        if (!isHoldfastError(err, Code.HELD_BY_ANOTHER)) throw err;
        assert.ok(performance.now() - closed < 2000, "the session hold outlived its client");
        await sleep(5);
      }
    }
    await h.close(); // a closed client is not an error when leaving the scope
  });

  test("session: a hold released on another connection is reported lost (onLost)", async () => {
    const { stack, client } = ctx();
    const p = newPartition();
    const c = new Client({ socketPath: stack.socket, timeoutMs: 5000 });
    try {
      let calls = 0;
      const lost = new Promise<[Hold, HoldfastError]>((resolve) => {
        void c
          .hold(NS, p, ["L1", "L2"], {
            session: true,
            onLost: (hold, err) => {
              calls++;
              resolve([hold, err]);
            },
          })
          .then(async (h) => {
            track(h);
            // The token released through another connection: the session sees
            // it at its next renewal (every third of the session TTL).
            assert.equal(await client.resume(NS, p, h.target, h.token).release(), 2);
          });
      });
      const [h, err] = await Promise.race([
        lost,
        sleep(10_000).then(() => assert.fail("the daemon did not report the session hold lost")),
      ]);
      assert.equal(err.code, Code.NOT_HELD);
      assert.ok(["L1", "L2"].includes(err.resourceId), `resource_id ${err.resourceId}`);
      assert.equal(h.lost, err);
      assert.equal(calls, 1);
      assert.ok((await c.health()).ready, "the event did not end the connection");
      await rejectsWith(h.extend(), Code.NOT_HELD);
      await h.close(); // NOT_HELD when leaving the scope is not an error
      assert.equal(h.active, false);
      // The connection keeps working for new session holds.
      const again = track(await c.hold(NS, p, ["L1"], { session: true }));
      assert.equal(again.lost, undefined);
      await again.release();
    } finally {
      c.close();
    }
  });

  test("session: await using releases a session hold; a confirm takes it out of the session", async (t) => {
    const { client } = ctx();
    const p = newPartition();
    {
      await using h = await client.hold(NS, p, ["U1"], { session: true, correlationId: "ts-live-session-using" });
      track(h);
      assert.equal((await h.status()).resources[0].state, ResourceState.HELD);
    }
    assert.equal((await client.status(NS, p, ["U1"])).resources[0].state, ResourceState.FREE);

    const h = track(await client.hold(NS, p, ["U2"], { session: true }));
    try {
      await h.confirm({ idempotencyKey: `ts-session-${randomUUID().slice(0, 8)}`, reference: "ts-session" });
    } catch (err) {
      if (isHoldfastError(err, Code.UNIMPLEMENTED, Code.FAILED_PRECONDITION)) {
        await h.release();
        t.skip(`daemon does not confirm here: ${err.message}`);
        return;
      }
      throw err;
    }
    assert.equal((await client.status(NS, p, ["U2"])).resources[0].state, ResourceState.CONFIRMED);
    await sleep(2 * (h.ttlMs / 3) + 200); // two renewal ticks: nothing is reported for a sold hold
    assert.equal(h.lost, undefined);
  });
}

async function rejectsWith(p: Promise<unknown>, ...codes: Code[]): Promise<HoldfastError> {
  try {
    await p;
  } catch (err) {
    assert.ok(isHoldfastError(err, ...codes), `expected ${codes.map((c) => Code[c]).join("|")}, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected rejection with ${codes.map((c) => Code[c]).join("|")}`);
}
