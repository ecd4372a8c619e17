// Live tests of waiting in line (HoldRequest.wait_ms, docs/waiting.md)
// against a real holdfastd: a hold that waits is granted when the holder
// lets go, in arrival order, and a wait that runs out answers
// HELD_BY_ANOTHER after about the wait. A file of its own: these need the
// daemon's side of waiting, and fail against a daemon without it (it
// ignores wait_ms and answers HELD_BY_ANOTHER at once).

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";

import { Client, Code, ResourceState, isHoldfastError, units, type Hold, type HoldfastError } from "../src/index.js";
import { Stack } from "./stack.js";

const NS = "seat";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const newPartition = () => `ts-w-${randomUUID().replaceAll("-", "").slice(0, 16)}`;

async function rejectsWith(p: Promise<unknown>, ...codes: Code[]): Promise<HoldfastError> {
  try {
    await p;
  } catch (err) {
    assert.ok(isHoldfastError(err, ...codes), `expected ${codes.map((c) => Code[c]).join("|")}, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected rejection with ${codes.map((c) => Code[c]).join("|")}`);
}

/** A call awaited later: its rejection must not count as unhandled meanwhile. */
function later<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

const skipReason = Stack.unavailableReason();

describe("live daemon: waiting in line", { skip: skipReason ?? false }, () => {
  let stack: Stack;
  let a: Client; // the holder
  let b: Client; // the one who waits
  let unmark: () => void = () => {};

  before(async () => {
    stack = await Stack.start();
    unmark = stack.markInUse(); // no daemon restart from live.test.ts meanwhile
    a = new Client({ socketPath: stack.socket, timeoutMs: 5000 });
    b = new Client({ socketPath: stack.socket, timeoutMs: 5000 });
    await Promise.all([a.health(), b.health()]);
  });

  after(async () => {
    a?.close();
    b?.close();
    unmark();
    await stack?.stop();
  });

  const track = (h: Hold) => {
    stack.tokens.push(h.token);
    return h;
  };

  test("wait: granted when the holder releases", async () => {
    const p = newPartition();
    const held = track(await a.hold(NS, p, ["W1", "W2"], { ttlMs: 30_000 }));
    const started = performance.now();
    const waiting = later(b.hold(NS, p, ["W2", "W3"], { ttlMs: 30_000, wait: 3000 }));
    await sleep(200);
    await held.release();
    const got = track(await waiting);
    const took = performance.now() - started;
    assert.ok(took >= 150 && took < 3000, `granted after ${Math.round(took)} ms`);
    assert.ok(got.fence > held.fence);
    assert.ok((await got.status()).resources.every((s) => s.state === ResourceState.HELD && s.owned));
    await got.release();
  });

  test("wait: one that runs out answers HELD_BY_ANOTHER after about the wait", async () => {
    const p = newPartition();
    const held = track(await a.hold(NS, p, ["X1"], { ttlMs: 30_000 }));
    const started = performance.now();
    const err = await rejectsWith(b.hold(NS, p, ["X1"], { ttlMs: 30_000, wait: 600 }), Code.HELD_BY_ANOTHER);
    const took = performance.now() - started;
    assert.equal(err.resourceId, "X1");
    assert.ok(took >= 550 && took < 3000, `answered after ${Math.round(took)} ms`);
    await held.release();
  });

  test("wait: waiters are served in arrival order", async () => {
    const p = newPartition();
    const c = new Client({ socketPath: stack.socket, timeoutMs: 5000 });
    try {
      const held = track(await a.hold(NS, p, ["Q1"], { ttlMs: 30_000 }));
      const order: string[] = [];
      const first = later(b.hold(NS, p, ["Q1"], { ttlMs: 30_000, wait: 5000 }).then((h) => (order.push("first"), track(h))));
      await sleep(100);
      const second = later(c.hold(NS, p, ["Q1"], { ttlMs: 30_000, wait: 5000 }).then((h) => (order.push("second"), track(h))));
      await sleep(100);
      await held.release();
      const h1 = await first;
      await sleep(200);
      assert.deepEqual(order, ["first"], "the second waiter must still wait");
      await h1.release();
      const h2 = await second;
      assert.deepEqual(order, ["first", "second"]);
      await h2.release();
    } finally {
      c.close();
    }
  });

  test("wait: a session hold waits for a session hold whose client closes", async () => {
    const p = newPartition();
    const holder = new Client({ socketPath: stack.socket, timeoutMs: 5000 });
    track(await holder.hold(NS, p, ["S1"], { session: true }));
    const waiting = later(b.hold(NS, p, ["S1"], { session: true, wait: 5000 }));
    await sleep(200);
    holder.close(); // the daemon releases its session hold at once
    const got = track(await waiting);
    assert.ok(got.session && got.lost === undefined);
    await got.release();
  });

  test("wait: pool units wait for units given back", async (t) => {
    const p = newPartition();
    try {
      await a.admin.setCapacity("ga", p, "adult", 1);
    } catch (err) {
      if (isHoldfastError(err, Code.NOT_FOUND, Code.FAILED_PRECONDITION, Code.UNIMPLEMENTED)) {
        t.skip(`the stack has no pools namespace 'ga': ${err.message}`);
        return;
      }
      throw err;
    }
    const held = track(await a.hold("ga", p, units({ adult: 1 }), { ttlMs: 30_000 }));
    const waiting = later(b.hold("ga", p, units({ adult: 1 }), { ttlMs: 30_000, wait: 3000 }));
    await sleep(200);
    await held.release();
    const got = track(await waiting);
    assert.deepEqual((await got.status()).pools.map((s) => [s.pool, s.owned]), [["adult", 1]]);
    await got.release();
  });
});
