// The client's write and read path (issue 15) against the scripted daemon:
// the calls of one tick leave in one write and are all answered, answers
// may come in any order, split across reads or several to a read (session
// events among them), deadlines hold for each call, and a broken connection
// fails every call waiting on it.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as net from "node:net";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";

import { Client, Code, HoldfastError, isHoldfastError } from "../src/index.js";
import type { Request } from "../src/gen/holdfast/v1/holdfast_pb.js";
import { FakeDaemon, okFor, sessionEvent } from "./fake-daemon.js";

let daemon: FakeDaemon;
let path: string;

beforeEach(async () => {
  path = join(mkdtempSync(join(tmpdir(), "hf-ts-")), "hf.sock");
  daemon = await new FakeDaemon(path).start();
});

afterEach(async () => {
  await daemon.stop();
  rmSync(dirname(path), { recursive: true, force: true });
});

const ids = (n: number, p = "R") => Array.from({ length: n }, (_, i) => `${p}${i}`);

/**
 * Counts the client side's socket writes while `fn` runs (the fake daemon's
 * own sockets, accepted by its server, are not counted).
 */
async function countWrites<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const proto = net.Socket.prototype as unknown as { write: (...args: unknown[]) => boolean };
  const write = proto.write;
  let n = 0;
  proto.write = function (this: net.Socket & { server?: unknown }, ...args: unknown[]) {
    if (!this.server) n++;
    return write.apply(this, args);
  };
  try {
    return [await fn(), n];
  } finally {
    proto.write = write;
  }
}

/** The connection a client talks on (internal; for tests only). */
const connOf = (c: Client) => (c as unknown as { conn: { fail(err: HoldfastError): void; waiting: number } }).conn;

test("the calls of one tick leave in one write and are all answered", async () => {
  const c = new Client({ socketPath: path });
  await c.health(); // connected, and OpenTelemetry looked for
  daemon.framesPerRead.length = 0;
  const names = ids(300);
  const [got, writes] = await countWrites(() => Promise.all(names.map((id) => c.status("seat", "p", [id]))));
  assert.deepEqual(got.map((r) => r.resources[0].id), names);
  assert.equal(writes, 1);
  // One write of 300 frames: the daemon reads it in one or two pieces, not 300.
  assert.equal(daemon.framesPerRead.reduce((a, b) => a + b, 0), 300);
  assert.ok(daemon.framesPerRead.length <= 3, `frames per read: ${daemon.framesPerRead.join(",")}`);
  c.close();
});

test("holds and releases made in one tick by many loops share writes", async () => {
  const c = new Client({ socketPath: path });
  await c.health();
  daemon.framesPerRead.length = 0;
  const [, writes] = await countWrites(() =>
    Promise.all(
      ids(16, "L").map(async (id) => {
        for (let i = 0; i < 20; i++) {
          const h = await c.hold("seat", "p", [id], { ttlMs: 1000 });
          await h.release();
        }
      }),
    ),
  );
  const frames = daemon.framesPerRead.reduce((a, b) => a + b, 0);
  assert.equal(frames, 16 * 20 * 2);
  // The daemon answers each read at once, so the 16 loops move in step:
  // each write carries the frames of many loops.
  assert.ok(writes <= frames / 4, `${writes} writes for ${frames} frames`);
  c.close();
});

test("answers in reverse order, all in one read, reach their own calls", async () => {
  const held: Request[] = [];
  daemon.handler = (req) => {
    held.push(req);
    return null;
  };
  const c = new Client({ socketPath: path });
  const names = ids(64);
  const calls = Promise.all(names.map((id) => c.status("seat", "p", [id])));
  while (held.length < names.length) await new Promise((r) => setTimeout(r, 5));
  daemon.sendFrames(held.reverse().map(okFor));
  const got = await calls;
  assert.deepEqual(got.map((r) => r.resources[0].id), names);
  c.close();
});

test("answers split into pieces of a few bytes are reassembled", async () => {
  daemon.answers = "split";
  const c = new Client({ socketPath: path });
  const names = ids(10);
  const got = await Promise.all(names.map((id) => c.status("seat", "p", [id])));
  assert.deepEqual(got.map((r) => r.resources[0].id), names);
  const h = await c.hold("seat", "p", ["E7"], { ttlMs: 5000 });
  assert.equal(h.ttlMs, 5000);
  assert.equal(await h.release(), 1);
  c.close();
});

test("several answers and a session event in one read", async () => {
  daemon.answers = "batch";
  const held: Request[] = [];
  daemon.handler = (req) => {
    if (req.method.case === "hold") return okFor(req); // fence 1
    held.push(req);
    return null;
  };
  const c = new Client({ socketPath: path });
  const lost: HoldfastError[] = [];
  const h = await c.hold("seat", "p", ["S1"], { session: true, onLost: (_h, err) => void lost.push(err) });
  const calls = Promise.all(ids(5).map((id) => c.status("seat", "p", [id])));
  while (held.length < 5) await new Promise((r) => setTimeout(r, 5));
  const event = sessionEvent({ namespace: "seat", partition: "p", fence: 1n, reason: Code.NOT_HELD, resourceId: "S1" });
  daemon.sendFrames([okFor(held[3]), okFor(held[1]), event, okFor(held[4]), okFor(held[0]), okFor(held[2])]);
  assert.deepEqual((await calls).map((r) => r.resources[0].id), ids(5));
  assert.equal(lost.length, 1);
  assert.equal(h.lost?.code, Code.NOT_HELD);
  c.close();
});

test("each call keeps its own deadline; one answered in time still resolves", async () => {
  daemon.handler = (req) => (req.method.case === "health" ? okFor(req) : null);
  const c = new Client({ socketPath: path });
  await c.health();
  const t0 = performance.now();
  const settled = (p: Promise<unknown>) =>
    p.then(
      () => ({ ok: true, ms: performance.now() - t0 }),
      (err) => ({ ok: false, ms: performance.now() - t0, err }),
    );
  // Longest first: the shorter deadlines that follow must re-arm the timer earlier.
  const runs = await Promise.all([
    settled(c.status("seat", "p", ["A"], { timeoutMs: 400 })),
    settled(c.status("seat", "p", ["B"], { timeoutMs: 100 })),
    settled(c.status("seat", "p", ["C"], { timeoutMs: 250 })),
    settled(c.health({ timeoutMs: 50 })),
  ]);
  assert.ok(runs[3].ok, "answered in time");
  for (const [i, ms] of [[0, 400], [1, 100], [2, 250]] as const) {
    const r = runs[i] as { ok: boolean; ms: number; err: unknown };
    assert.ok(!r.ok && isHoldfastError(r.err) && r.err.code === Code.DEADLINE_EXCEEDED, `call ${i}: ${String(r.err)}`);
    assert.match(String((r.err as Error).message), new RegExp(`within ${ms} ms`));
    assert.ok(r.ms >= ms - 2 && r.ms < ms + 200, `call ${i} gave up after ${r.ms.toFixed(0)} ms (deadline ${ms})`);
  }
  assert.ok(runs[1].ms < runs[2].ms && runs[2].ms < runs[0].ms, "in deadline order");
  assert.equal(connOf(c).waiting, 0);
  // The connection is still good for later calls.
  daemon.handler = okFor;
  assert.equal((await c.status("seat", "p", ["D"])).resources[0].id, "D");
  c.close();
});

test("a broken connection fails every call waiting on it", async () => {
  daemon.handler = () => null;
  const c = new Client({ socketPath: path });
  const calls = ids(40).map((id) => c.status("seat", "p", [id], { timeoutMs: 5000 }));
  while (daemon.requests.length < 40) await new Promise((r) => setTimeout(r, 5));
  await daemon.stop();
  const results = await Promise.allSettled(calls);
  for (const r of results) {
    assert.equal(r.status, "rejected");
    const err = (r as PromiseRejectedResult).reason;
    assert.ok(isHoldfastError(err) && err.code === Code.UNAVAILABLE, String(err));
    assert.match(err.message, /unknown/); // written: the daemon may have acted on it
  }
  c.close();
});

test("calls not yet written when the connection breaks are sent again on a new one", async () => {
  const c = new Client({ socketPath: path });
  await c.health();
  // Queued in this tick, not written yet: the connection breaks first.
  const calls = ids(8).map((id) => c.status("seat", "p", [id]));
  connOf(c).fail(new HoldfastError(Code.UNAVAILABLE, "connection lost (test)"));
  const got = await Promise.all(calls);
  assert.deepEqual(got.map((r) => r.resources[0].id), ids(8));
  assert.equal(daemon.connections, 2);
  c.close();
});

test("an abort stops waiting for that call only; one aborted before it starts sends nothing", async () => {
  daemon.handler = (req) => (req.method.case === "status" && req.method.value.ids[0] === "slow" ? null : okFor(req));
  const c = new Client({ socketPath: path });
  await c.health();
  const sent = daemon.requests.length;
  const aborted = AbortSignal.abort();
  await assert.rejects(c.status("seat", "p", ["X"], { signal: aborted }), { name: "AbortError" });
  const ac = new AbortController();
  const slow = c.status("seat", "p", ["slow"], { signal: ac.signal, timeoutMs: 5000 });
  const fast = c.status("seat", "p", ["F"], { signal: ac.signal });
  assert.equal((await fast).resources[0].id, "F");
  ac.abort();
  await assert.rejects(slow, { name: "AbortError" });
  assert.deepEqual(daemon.requests.slice(sent).map((r) => (r.method.case === "status" ? r.method.value.ids[0] : "")), ["slow", "F"]);
  assert.equal(connOf(c).waiting, 0);
  c.close();
});
