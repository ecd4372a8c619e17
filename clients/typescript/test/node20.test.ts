// Node 20 without `await using`: a consumer compiled with a plain tsconfig (no
// ESNext.Disposable, target ESNext) uses withHold (seats and units) and
// hold.close() in a finally (also for a session hold), and gets the same
// scope-exit behaviour as `await using`.

import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { promisify } from "node:util";

import { FakeDaemon } from "./fake-daemon.js";

const PKG = fileURLToPath(new URL("../../", import.meta.url)); // clients/typescript/
const TSC = join(PKG, "node_modules", "typescript", "bin", "tsc");

test("withHold and hold.close() work without await using or ESNext.Disposable", async () => {
  const tsconfig = join(PKG, "test", "node20", "tsconfig.json");
  const opts = JSON.parse(readFileSync(tsconfig, "utf8")).compilerOptions;
  assert.deepEqual(opts.lib, ["ES2022"]);
  const built = spawnSync(process.execPath, [TSC, "-p", tsconfig], { encoding: "utf8", timeout: 120_000 });
  assert.equal(built.status, 0, built.stdout + built.stderr);
  const out = join(PKG, "dist", "node20", "consumer.mjs");
  assert.doesNotMatch(readFileSync(out, "utf8"), /await using \w+ =/);

  const path = join(mkdtempSync(join(tmpdir(), "hf-n20-")), "hf.sock");
  const daemon = await new FakeDaemon(path).start();
  try {
    // Asynchronously: the fake daemon answers from this process's event loop.
    const run = await promisify(execFile)(process.execPath, [out, path], { encoding: "utf8", timeout: 60_000 });
    assert.deepEqual(run.stdout.trim().split("\n"), [
      'confirmed {"fence":"1","replayed":false,"claims":[{"resourceId":"E7","fence":"1","reference":"order-1","confirmedAtUnixMs":1764547200000}],"units":{},"confirmedAtUnixMs":1764547200000}',
      "body error kept: payment declined",
      "held E9 fence 1",
      "active after close: false, retryable(new Error): false",
      "session true, lost no",
      'sold {"adult":2,"child":1}',
    ]);
    assert.deepEqual(
      daemon.requests.map((r) => r.method.case),
      ["hold", "confirm", "hold", "release", "hold", "release", "hold", "release", "hold", "confirm"],
    );
  } finally {
    await daemon.stop();
    rmSync(dirname(path), { recursive: true, force: true });
  }
});
