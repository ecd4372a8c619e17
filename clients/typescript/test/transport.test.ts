// Transport behaviour (framing, id matching, deadlines, reconnect, errors)
// against a scripted socket peer; see fake-daemon.ts for why.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import { inspect } from "node:util";

import { create } from "@bufbuild/protobuf";
import { Client, ClientClosedError, Code, HoldfastError, isHoldfastError } from "../src/index.js";
import { ErrorDetailSchema, ResponseSchema, type Request } from "../src/gen/holdfast/v1/holdfast_pb.js";
import { FakeDaemon, okFor } from "./fake-daemon.js";

const TOKEN = "42.c2VjcmV0LXRva2VuLXZhbHVl";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

async function rejectsWith(p: Promise<unknown>, code: Code): Promise<HoldfastError> {
  try {
    await p;
  } catch (err) {
    assert.ok(isHoldfastError(err), `expected HoldfastError, got ${String(err)}`);
    assert.equal(err.codeName, Code[code]);
    return err;
  }
  assert.fail(`expected rejection with ${Code[code]}`);
}

test("responses out of order are matched by id on one connection", async () => {
  const held: Request[] = [];
  daemon.handler = (req) => {
    held.push(req);
    return held.length < 2 ? null : [okFor(held[1]), okFor(held[0])];
  };
  const c = new Client({ socketPath: path, timeoutMs: 5000 });
  const [a, b] = await Promise.all([c.status("seat", "p", ["A1"]), c.status("seat", "p", ["B1"])]);
  assert.deepEqual(a.resources.map((s) => s.id), ["A1"]);
  assert.deepEqual(b.resources.map((s) => s.id), ["B1"]);
  assert.equal(daemon.connections, 1);
  c.close();
});

test("many concurrent calls get unique ids and their own answers", async () => {
  const c = new Client({ socketPath: path, timeoutMs: 5000 });
  const ids = Array.from({ length: 200 }, (_, i) => `R${i}`);
  const got = await Promise.all(ids.map((id) => c.status("seat", "p", [id])));
  assert.deepEqual(got.map((r) => r.resources[0].id), ids);
  const wireIds = daemon.requests.map((r) => r.id);
  assert.equal(new Set(wireIds).size, 200);
  assert.ok(!wireIds.includes(0n));
  c.close();
});

test("deadline is sent as timeout_ms and enforced locally", async () => {
  daemon.handler = () => null;
  const c = new Client({ socketPath: path });
  const err = await rejectsWith(c.health({ timeoutMs: 200, correlationId: "trace-1" }), Code.DEADLINE_EXCEEDED);
  assert.equal(err.correlationId, "trace-1");
  const req = daemon.requests[0];
  assert.ok(req.timeoutMs > 0 && req.timeoutMs <= 200, `timeout_ms ${req.timeoutMs}`);
  assert.equal(req.correlationId, "trace-1");
  c.close();
});

test("a late answer after the deadline is dropped", async () => {
  let first: Request | undefined;
  daemon.handler = (req) => {
    if (!first) {
      first = req;
      return null;
    }
    return [okFor(first), okFor(req)];
  };
  const c = new Client({ socketPath: path });
  await rejectsWith(c.health({ timeoutMs: 100 }), Code.DEADLINE_EXCEEDED);
  const h = await c.hold("seat", "p", ["E7"], { ttlMs: 5000 });
  assert.equal(h.ttlMs, 5000);
  assert.equal(h.fence, 1n);
  c.close();
});

test("a generated correlation id is sent and kept by the hold", async () => {
  const c = new Client({ socketPath: path });
  const h = await c.hold("seat", "p", ["E7"]);
  const cid = daemon.requests[0].correlationId;
  assert.match(cid, /^[0-9a-f]{32}$/);
  assert.equal(h.correlationId, cid);
  await h.extend(1000);
  assert.equal(daemon.requests[1].correlationId, cid);
  c.close();
});

test("error codes reject with HoldfastError carrying code and detail", async () => {
  daemon.handler = (req) =>
    create(ResponseSchema, {
      id: req.id,
      correlationId: req.correlationId,
      code: Code.HELD_BY_ANOTHER,
      message: "resource E8 is held",
      error: create(ErrorDetailSchema, { resourceId: "E8" }),
    });
  const c = new Client({ socketPath: path });
  const err = await rejectsWith(c.hold("seat", "p", ["E7", "E8"], { correlationId: "t-9" }), Code.HELD_BY_ANOTHER);
  assert.equal(err.code, Code.HELD_BY_ANOTHER);
  assert.equal(err.resourceId, "E8");
  assert.equal(err.correlationId, "t-9");
  assert.match(String(err), /HELD_BY_ANOTHER.*E8/);
  c.close();
});

test("reconnects after the daemon restarts", async () => {
  const c = new Client({ socketPath: path });
  assert.ok((await c.health()).ready);
  await daemon.stop();
  await daemon.start();
  assert.ok((await c.health()).ready);
  assert.equal(daemon.connections, 2);
  c.close();
});

test("a call waits for a restarting daemon within its deadline", async () => {
  const c = new Client({ socketPath: path });
  await c.health();
  await daemon.stop();
  setTimeout(() => void daemon.start(), 300);
  assert.ok((await c.health({ timeoutMs: 5000 })).ready);
  c.close();
});

test("an unreachable daemon is UNAVAILABLE", async () => {
  await daemon.stop();
  const c = new Client({ socketPath: path });
  const err = await rejectsWith(c.health({ timeoutMs: 200 }), Code.UNAVAILABLE);
  assert.ok(err.message.includes(path));
  c.close();
});

test("a call in flight when the daemon dies is UNAVAILABLE (outcome unknown)", async () => {
  daemon.handler = () => null;
  const c = new Client({ socketPath: path });
  setTimeout(() => void daemon.stop(), 100);
  const err = await rejectsWith(c.health({ timeoutMs: 5000 }), Code.UNAVAILABLE);
  assert.match(err.message, /unknown/);
  c.close();
});

test("an id-0 rejection fails the call; the next call reconnects", async () => {
  let n = 0;
  daemon.handler = (req) =>
    ++n === 1 ? create(ResponseSchema, { id: 0n, code: Code.INVALID_ARGUMENT, message: "undecodable request frame" }) : okFor(req);
  const c = new Client({ socketPath: path });
  await rejectsWith(c.health(), Code.INVALID_ARGUMENT);
  await daemon.stop(); // the real daemon closes after an id-0 answer
  await daemon.start();
  assert.ok((await c.health()).ready);
  c.close();
});

test("an oversized response frame drops the connection", async () => {
  daemon.handler = () => null;
  const c = new Client({ socketPath: path });
  setTimeout(() => daemon.sendRaw(Buffer.from([0xff, 0xff, 0xff, 0xff])), 100);
  const err = await rejectsWith(c.health({ timeoutMs: 5000 }), Code.UNAVAILABLE);
  assert.match(err.message, /exceeds/);
  c.close();
});

test("a closed client gives a clear error; close fails calls in flight", async () => {
  daemon.handler = () => null;
  const c = new Client({ socketPath: path });
  const inFlight = c.health({ timeoutMs: 5000 });
  await sleep(50);
  c.close();
  await assert.rejects(inFlight, ClientClosedError);
  await assert.rejects(c.health(), (err: unknown) => {
    assert.ok(err instanceof ClientClosedError);
    assert.equal(err.code, Code.FAILED_PRECONDITION);
    assert.match(err.message, /closed/);
    return true;
  });
});

test("await using releases the hold at the end of the scope", async () => {
  const c = new Client({ socketPath: path });
  {
    await using h = await c.hold("seat", "p", ["E7", "E8"]);
    assert.ok(h.active);
  }
  await assert.rejects(async () => {
    await using _h = await c.hold("seat", "p", ["E9"]);
    throw new Error("body failed");
  }, /body failed/);
  assert.deepEqual(
    daemon.requests.map((r) => r.method.case),
    ["hold", "release", "hold", "release"],
  );
  const rel = daemon.requests[1].method;
  assert.equal(rel.case, "release");
  if (rel.case === "release") {
    assert.deepEqual(rel.value.ids, ["E7", "E8"]);
    assert.equal(rel.value.token, "1.fake");
  }
  c.close();
});

test("dispose ignores an expired hold", async () => {
  daemon.handler = (req) =>
    req.method.case === "release" ? create(ResponseSchema, { id: req.id, code: Code.NOT_HELD, message: "expired" }) : okFor(req);
  const c = new Client({ socketPath: path });
  let hold;
  {
    await using h = await c.hold("seat", "p", ["E7"]);
    hold = h;
  }
  assert.equal(hold.active, false);
  const h2 = await c.hold("seat", "p", ["E7"]);
  await rejectsWith(h2.release(), Code.NOT_HELD);
  c.close();
});

test("the token never shows in inspect, JSON, toString or errors", async () => {
  daemon.handler = (req) => {
    const resp = okFor(req);
    if (resp.result.case === "hold") {
      resp.result.value.token = TOKEN;
      return resp;
    }
    return create(ResponseSchema, { id: req.id, code: Code.NOT_HELD, message: "hold expired" });
  };
  const c = new Client({ socketPath: path });
  const h = await c.hold("seat", "p", ["E7"]);
  assert.equal(h.token, TOKEN);
  for (const shown of [inspect(h, { showHidden: true, depth: 5 }), JSON.stringify(h), String(h)]) {
    assert.ok(!shown.includes(TOKEN), shown);
  }
  const err = await rejectsWith(h.extend(1000), Code.NOT_HELD);
  assert.ok(!inspect(err).includes(TOKEN));
  c.close();
});

test("bad arguments are rejected before sending", async () => {
  const c = new Client({ socketPath: path });
  await assert.rejects(c.hold("seat", "p", "E7" as unknown as string[]), TypeError);
  const h = await c.hold("seat", "p", ["E7"]);
  await rejectsWith(h.confirm({ idempotencyKey: "" }), Code.INVALID_ARGUMENT);
  c.close();
});

test("an aborted signal stops waiting", async () => {
  daemon.handler = () => null;
  const c = new Client({ socketPath: path });
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 50);
  await assert.rejects(c.health({ signal: ac.signal, timeoutMs: 5000 }), { name: "AbortError" });
  c.close();
});
