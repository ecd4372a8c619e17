// Live tests against a real holdfastd + Redis (+ PostgreSQL): see stack.ts.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";

import { Client, ClientClosedError, Code, HoldfastError, ResourceState, isHoldfastError, seats, type Hold } from "../src/index.js";
import { livePoolTests } from "./live-pools.js";
import { liveSegmentAndStringTests } from "./live-segments.js";
import { liveSessionTests } from "./live-sessions.js";
import { liveSurfaceTests } from "./live-surface.js";
import { Stack } from "./stack.js";

const NS = "seat";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const newPartition = () => `ts-${randomUUID().replaceAll("-", "").slice(0, 16)}`;

async function rejectsWith(p: Promise<unknown>, ...codes: Code[]): Promise<HoldfastError> {
  try {
    await p;
  } catch (err) {
    assert.ok(isHoldfastError(err, ...codes), `expected ${codes.map((c) => Code[c]).join("|")}, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected rejection with ${codes.map((c) => Code[c]).join("|")}`);
}

const skipReason = Stack.unavailableReason();

describe("live daemon", { skip: skipReason ?? false }, () => {
  let stack: Stack;
  let client: Client;

  before(async () => {
    stack = await Stack.start();
    client = new Client({ socketPath: stack.socket, timeoutMs: 5000 });
  });

  after(async () => {
    client?.close();
    await stack?.stop();
  });

  const track = (h: Hold) => {
    stack.tokens.push(h.token);
    return h;
  };

  test("health", async () => {
    const h = await client.health();
    assert.ok(h.live && h.ready);
    assert.equal(h.redis, "up");
    assert.match(h.library, /^holdfast_v/);
  });

  test("hold / extend / release round trip", async () => {
    const p = newPartition();
    const ids = ["E7", "E8", "E9"];
    const h = track(await client.hold(NS, p, seats(ids), { ttlMs: 5000, correlationId: "ts-live-roundtrip" }));
    assert.ok(h.active && !h.degraded);
    assert.ok(h.fence > 0n);
    assert.ok(h.token.startsWith(`${h.fence}.`));
    assert.equal(h.ttlMs, 5000);

    const st = (await h.status()).resources;
    assert.deepEqual(st.map((s) => [s.id, s.state, s.owned]), ids.map((i) => [i, ResourceState.HELD, true]));
    assert.ok(st.every((s) => s.ttlMs > 0 && s.ttlMs <= 5000));

    assert.equal(await h.extend(20000), 20000);
    assert.ok((await h.status()).resources.every((s) => s.ttlMs > 5000 && s.ttlMs <= 20000));

    assert.equal(await h.release(), 3);
    assert.equal(h.active, false);
    const after = (await client.status(NS, p, seats(ids))).resources;
    assert.ok(after.every((s) => s.state === ResourceState.FREE && !s.owned));

    await rejectsWith(client.resume(NS, p, seats(ids), h.token).release(), Code.NOT_HELD);
    await rejectsWith(h.extend(1000), Code.NOT_HELD);
  });

  test("await using releases at the end of the scope", async () => {
    const p = newPartition();
    {
      await using h = await client.hold(NS, p, ["A1", "A2"], { ttlMs: 30000 });
      track(h);
      assert.equal((await h.status()).resources[0].state, ResourceState.HELD);
    }
    const st = (await client.status(NS, p, ["A1", "A2"])).resources; // a plain array is seats
    assert.ok(st.every((s) => s.state === ResourceState.FREE));
  });

  test("fences rise within a partition", async () => {
    const p = newPartition();
    const a = track(await client.hold(NS, p, ["F1"], { ttlMs: 5000 }));
    await a.release();
    const b = track(await client.hold(NS, p, ["F1"], { ttlMs: 5000 }));
    assert.ok(b.fence > a.fence);
    assert.notEqual(b.token, a.token);
    await b.release();
  });

  test("contention: of two holders on two connections, one wins", async () => {
    const p = newPartition();
    const ids = ["E7", "E8", "E9"];
    const c1 = new Client({ socketPath: stack.socket, timeoutMs: 5000 });
    const c2 = new Client({ socketPath: stack.socket, timeoutMs: 5000 });
    await Promise.all([c1.health(), c2.health()]); // both connected before the race
    const results = await Promise.allSettled([c1.hold(NS, p, ids, { ttlMs: 10000 }), c2.hold(NS, p, ids, { ttlMs: 10000 })]);
    c1.close();
    c2.close();
    const wins = results.filter((r) => r.status === "fulfilled");
    const losses = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    assert.equal(wins.length, 1);
    assert.equal(losses.length, 1);
    track((wins[0] as PromiseFulfilledResult<Hold>).value);
    const err = losses[0].reason;
    assert.ok(isHoldfastError(err, Code.HELD_BY_ANOTHER), String(err));
    assert.ok(ids.includes(err.resourceId));
  });

  test("all or nothing on overlap", async () => {
    const p = newPartition();
    const a = track(await client.hold(NS, p, ["E7", "E8"], { ttlMs: 10000 }));
    const other = new Client({ socketPath: stack.socket });
    const err = await rejectsWith(other.hold(NS, p, ["E8", "E9"], { ttlMs: 10000 }), Code.HELD_BY_ANOTHER);
    other.close();
    assert.equal(err.resourceId, "E8");
    assert.equal((await client.status(NS, p, seats(["E9"]))).resources[0].state, ResourceState.FREE);
    // A well-formed token of another hold cannot release this one.
    const foreign = track(await client.hold(NS, newPartition(), ["X1"], { ttlMs: 5000 }));
    await rejectsWith(client.resume(NS, p, seats(["E7", "E8"]), foreign.token).release(), Code.HELD_BY_ANOTHER, Code.NOT_HELD);
    await foreign.release();
    assert.ok((await a.status()).resources.every((s) => s.owned));
    await a.release();
  });

  test("invalid arguments and unknown namespace", async () => {
    const p = newPartition();
    const err = await rejectsWith(client.hold(NS, p, ["ok", "not ok"], { ttlMs: 5000 }), Code.INVALID_ARGUMENT);
    assert.match(err.field, /ids/);
    await rejectsWith(client.hold(NS, p, [], { ttlMs: 5000 }), Code.INVALID_ARGUMENT);
    await rejectsWith(client.hold(NS, "{bad:partition}", ["E1"], { ttlMs: 5000 }), Code.INVALID_ARGUMENT);
    await rejectsWith(client.hold("no-such-namespace", p, ["E1"], { ttlMs: 5000 }), Code.NOT_FOUND);
  });

  test("confirm and idempotent retry", async (t) => {
    const p = newPartition();
    const ids = ["E7", "E8", "E9"];
    const h = track(await client.hold(NS, p, seats(ids), { ttlMs: 30000 }));
    const key = `order-${randomUUID().slice(0, 12)}`;
    const payload = new Uint8Array([0, 1, 115, 101, 97, 116, 115]);
    let first;
    try {
      first = await h.confirm({ idempotencyKey: key, reference: "order-4711", payload });
    } catch (err) {
      if (isHoldfastError(err, Code.UNIMPLEMENTED, Code.FAILED_PRECONDITION)) {
        await h.release();
        t.skip(`daemon does not confirm yet (confirm issue not landed): ${err.message}`);
        return;
      }
      throw err;
    }
    assert.equal(first.replayed, false);
    assert.equal(first.fence, h.fence);
    assert.deepEqual(first.claims.map((c) => c.resourceId).sort(), ids);
    assert.ok(first.claims.every((c) => c.reference === "order-4711" && c.fence === h.fence));

    // A retry with the same key (e.g. after a timeout): the stored result, no second claim.
    const again = await client.resume(NS, p, seats(ids), h.token).confirm({ idempotencyKey: key, reference: "order-4711", payload });
    assert.equal(again.replayed, true);
    assert.equal(again.fence, first.fence);
    assert.deepEqual(again.claims.map((c) => c.resourceId).sort(), ids);

    await rejectsWith(client.hold(NS, p, ["E8"], { ttlMs: 5000 }), Code.CONFIRMED);
    assert.ok((await client.status(NS, p, seats(ids))).resources.every((s) => s.state === ResourceState.CONFIRMED));

    const ckey = `${key}-cancel`;
    const c1 = await client.cancel(NS, p, seats(ids), { idempotencyKey: ckey, reference: "order-4711" });
    assert.equal(c1.cancelled, 3);
    assert.equal(c1.replayed, false);
    const c2 = await client.cancel(NS, p, seats(ids), { idempotencyKey: ckey, reference: "order-4711" });
    assert.equal(c2.replayed, true);
    const h2 = track(await client.hold(NS, p, ids, { ttlMs: 5000 }));
    await h2.release();
  });

  test("deadline exceeded while Redis is paused", async (t) => {
    if (!stack.redisSocket) {
      t.skip("needs the stack's Redis socket (DIR/redis.sock)");
      return;
    }
    const p = newPartition();
    const c = new Client({ socketPath: stack.socket, timeoutMs: 5000 });
    try {
      await stack.withRedisPaused(async () => {
        const err = await rejectsWith(c.hold(NS, p, ["D1"], { ttlMs: 2000, timeoutMs: 300 }), Code.DEADLINE_EXCEEDED);
        assert.equal(err.code, Code.DEADLINE_EXCEEDED);
      });
      // Redis is back: a new attempt works once the daemon recovers.
      const until = Date.now() + 15_000;
      for (;;) {
        try {
          const h = track(await c.hold(NS, p, ["D2"], { ttlMs: 2000 }));
          await h.release();
          break;
        } catch (err) {
          if (!isHoldfastError(err, Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED) || Date.now() > until) throw err;
          await sleep(100);
        }
      }
    } finally {
      c.close();
    }
  });

  test("the client reconnects after the daemon restarts", async (t) => {
    if (!stack.canRestart) {
      t.skip("restarting the daemon needs the stack's pid file (DIR/holdfastd.pid)");
      return;
    }
    const p = newPartition();
    const c = new Client({ socketPath: stack.socket, timeoutMs: 5000 });
    try {
      const h = track(await c.hold(NS, p, ["R1", "R2"], { ttlMs: 60000 }));
      await stack.restartDaemon();
      // Same Client: the next call reconnects on its own; the hold lives on in Redis.
      const until = Date.now() + 30_000;
      for (;;) {
        try {
          assert.equal(await h.extend(60000, { timeoutMs: 5000 }), 60000);
          break;
        } catch (err) {
          if (!isHoldfastError(err, Code.UNAVAILABLE) || Date.now() > until) throw err;
          await sleep(100);
        }
      }
      assert.equal(await h.release(), 2);
      // Leave the stack as found: the restarted daemon's PostgreSQL pool may
      // still be connecting, and the tests after this one expect it ready.
      await stack.waitReady(30_000);
    } finally {
      c.close();
    }
  });

  test("a closed client gives a clear error", async () => {
    const c = new Client({ socketPath: stack.socket });
    assert.ok((await c.health()).live);
    c.close();
    await assert.rejects(c.hold(NS, newPartition(), ["C1"], { ttlMs: 5000 }), (err: unknown) => {
      assert.ok(err instanceof ClientClosedError);
      assert.equal(err.code, Code.FAILED_PRECONDITION);
      assert.match(err.message, /closed/);
      return true;
    });
  });

  test("many calls in flight on one connection", async () => {
    const p = newPartition();
    const holds = await Promise.all(Array.from({ length: 16 }, (_, i) => client.hold(NS, p, [`M${i}`], { ttlMs: 10000 })));
    holds.forEach(track);
    assert.equal(new Set(holds.map((h) => h.token)).size, 16);
    await Promise.all(holds.map((h) => h.release()));
  });

  test("the seat-reservation example runs", async (t) => {
    const example = fileURLToPath(new URL("../examples/seat-reservation.js", import.meta.url));
    const r = spawnSync(process.execPath, [example], {
      env: { ...process.env, HOLDFAST_SOCKET: stack.socket },
      encoding: "utf8",
      timeout: 60_000,
    });
    if (/UNIMPLEMENTED|FAILED_PRECONDITION/.test(r.stderr)) {
      t.skip("daemon does not confirm yet (confirm issue not landed)");
      return;
    }
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /first order: booked; second order: not booked/);
  });

  // Journey segments and strings with NUL bytes (live-segments.ts), in this
  // suite so they share its stack and never run beside its daemon restart.
  liveSegmentAndStringTests(() => ({ stack, client }));
  // Session holds (live-sessions.ts), pools (live-pools.ts) and the one
  // surface over seats, units and segments (live-surface.ts), likewise.
  liveSessionTests(() => ({ stack, client }));
  livePoolTests(() => ({ stack, client }));
  liveSurfaceTests(() => ({ stack, client }));

  test("the daemon log never shows a token", (t) => {
    const log = stack.dir ? join(stack.dir, "holdfastd.log") : null;
    if (!log || !existsSync(log)) {
      t.skip("daemon log not available (DIR/holdfastd.log)");
      return;
    }
    if (stack.tokens.length === 0) {
      t.skip("no live test issued a token in this run");
      return;
    }
    const text = readFileSync(log, "utf8");
    const leaked = stack.tokens.filter((tok) => text.includes(tok) || text.includes(tok.split(".")[1]));
    assert.deepEqual(leaked, []);
  });
});
