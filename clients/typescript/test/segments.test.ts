// Journey segments on the wire, against the scripted peer: every call carries
// the segment of its target, a Hold carries its own to extend, release,
// confirm, status and close, and calls without one leave the field unset.
// The daemon's side is in live-segments.ts (run from live.test.ts).

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import { inspect } from "node:util";

import { create } from "@bufbuild/protobuf";
import { Client, legIds, seats, withHold } from "../src/index.js";
import { CancelResponseSchema, type Request } from "../src/gen/holdfast/v1/holdfast_pb.js";
import { FakeDaemon, okFor } from "./fake-daemon.js";

let daemon: FakeDaemon;
let path: string;

beforeEach(async () => {
  path = join(mkdtempSync(join(tmpdir(), "hf-ts-")), "hf.sock");
  daemon = await new FakeDaemon(path).start();
  daemon.handler = (req) => {
    const resp = okFor(req);
    if (req.method.case === "cancel") resp.result = { case: "cancel", value: create(CancelResponseSchema, { cancelled: 1 }) };
    return resp;
  };
});

afterEach(async () => {
  await daemon.stop();
  rmSync(dirname(path), { recursive: true, force: true });
});

/** "method from->to" (or "method -") for every request the peer got. */
function seen(): string[] {
  return daemon.requests.map((r: Request) => {
    const v = r.method.value as { segment?: { fromStop: number; toStop: number } };
    return v.segment ? `${r.method.case} ${v.segment.fromStop}->${v.segment.toStop}` : `${r.method.case} -`;
  });
}

const SEG = (fromStop: number, toStop: number) => ({ fromStop, toStop });

test("a hold carries its segment to every call", async () => {
  const c = new Client({ socketPath: path, timeoutMs: 5000 });
  {
    await using h = await c.hold("train", "ktx", seats(["E7"], SEG(0, 2)));
    assert.deepEqual(h.target, { kind: "seats", ids: ["E7"], segment: { fromStop: 0, toStop: 2 } });
    assert.match(String(h), /segment=0->2/);
    assert.doesNotMatch(inspect(h) + JSON.stringify(h), /1\.fake/);
    assert.deepEqual(JSON.parse(JSON.stringify(h)).target.segment, { fromStop: 0, toStop: 2 });
    await h.extend(1000);
    await h.status();
  } // close: release on the same legs
  const h2 = await c.hold("train", "ktx", seats(["E7"], SEG(2, 4)));
  await h2.confirm({ idempotencyKey: "k-1", reference: "order-1" });
  await c.cancel("train", "ktx", seats(["E7"], SEG(2, 4)), { idempotencyKey: "r-1", reference: "order-1" });
  await c.status("train", "ktx", seats(["E7"], SEG(0, 4)));
  const other = c.resume("train", "ktx", seats(["E7"], SEG(5, 6)), "1.fake");
  await other.release();
  await other.extend();
  await other.confirm({ idempotencyKey: "k-2" });
  await withHold(c, "train", "ktx", seats(["E8"], SEG(6, 7)), {}, async (h) => h.status());
  c.close();
  assert.deepEqual(seen(), [
    "hold 0->2", "extend 0->2", "status 0->2", "release 0->2",
    "hold 2->4", "confirm 2->4", "cancel 2->4", "status 0->4",
    "release 5->6", "extend 5->6", "confirm 5->6",
    "hold 6->7", "status 6->7", "release 6->7",
  ]);
});

test("the deprecated segment option and low-level calls send the same legs", async () => {
  const c = new Client({ socketPath: path, timeoutMs: 5000 });
  const h = await c.hold("train", "ktx", ["E7"], { segment: SEG(0, 2) });
  assert.deepEqual(h.segment, SEG(0, 2));
  assert.deepEqual(h.ids, ["E7"]);
  await c.cancel("train", "ktx", ["E7"], { idempotencyKey: "r-1", reference: "order-1", segment: SEG(2, 4) });
  await c.status("train", "ktx", ["E7"], { segment: SEG(0, 4) });
  await c.release("train", "ktx", ["E7"], "1.fake", { segment: SEG(5, 6) });
  await c.extend("train", "ktx", ["E7"], "1.fake", { segment: SEG(5, 6) });
  await c.confirm("train", "ktx", ["E7"], "1.fake", { idempotencyKey: "k-2", segment: SEG(5, 6) });
  // A target already says where it goes: a second segment beside it is refused.
  await assert.rejects(c.hold("train", "ktx", seats(["E7"]), { segment: SEG(0, 1) }), TypeError);
  c.close();
  assert.deepEqual(seen(), ["hold 0->2", "cancel 2->4", "status 0->4", "release 5->6", "extend 5->6", "confirm 5->6"]);
});

test("no segment leaves the field unset", async () => {
  const c = new Client({ socketPath: path, timeoutMs: 5000 });
  {
    await using h = await c.hold("seat", "run-1", seats(["E7"]));
    assert.equal(h.target.kind === "seats" && h.target.segment, undefined);
    assert.doesNotMatch(String(h) + JSON.stringify(h), /segment/);
    await h.extend(1000);
    await h.confirm({ idempotencyKey: "k-3" });
  }
  await c.cancel("seat", "run-1", seats(["E7"]), { idempotencyKey: "r-3", reference: "k-3" });
  await c.status("seat", "run-1", ["E7"]);
  c.close();
  assert.deepEqual(seen(), ["hold -", "extend -", "confirm -", "cancel -", "status -"]);
});

test("segments are checked for shape, and name their legs", async () => {
  const c = new Client({ socketPath: path, timeoutMs: 5000 });
  for (const bad of [{ fromStop: -1, toStop: 2 }, { fromStop: 0.5, toStop: 2 }, { fromStop: 0, toStop: 2 ** 32 }]) {
    assert.throws(() => seats(["E7"], bad), RangeError);
    await assert.rejects(c.hold("train", "ktx", ["E7"], { segment: bad }), RangeError);
  }
  assert.equal(daemon.requests.length, 0);
  assert.deepEqual(legIds(["E7", "E8"], { fromStop: 1, toStop: 3 }), ["E7@1", "E7@2", "E8@1", "E8@2"]);
  c.close();
});
