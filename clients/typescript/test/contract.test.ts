// The client contract (protos/contract/contract.json): this client's constants
// and behaviour, checked against the file every client reads.

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, test } from "node:test";

import { create } from "@bufbuild/protobuf";
import {
  Client,
  ClientClosedError,
  Code,
  DEFAULT_SOCKET,
  DEFAULT_TIMEOUT_MS,
  HoldfastError,
  RETRYABLE_CODES,
  SOCKET_ENV,
  codeName,
  isRetryable,
  jsonReplacer,
  seats,
  withHold,
} from "../src/index.js";
import { RECONNECT_BACKOFF, reconnectDelayMs, wireTimeoutMs } from "../src/contract.js";
import { ResponseSchema, type Request } from "../src/gen/holdfast/v1/holdfast_pb.js";
import { FakeDaemon, okFor } from "./fake-daemon.js";
import { TEST_STACK_ENV, stackChoice } from "./stack.js";

interface Contract {
  socket: { default_path: string; env: string };
  timeout: { default_ms: number; timeout_ms_examples: { left_us: number; timeout_ms: number }[] };
  reconnect_backoff: {
    initial_ms: number;
    multiplier: number;
    max_ms: number;
    jitter: number;
    nominal_examples: { attempt: number; ms: number }[];
  };
  codes: { value: number; name: string; retryable: boolean }[];
  retryable_codes: string[];
  code_name: { unknown_examples: { value: number; name: string }[] };
  scope_exit: {
    sends_release_unless: string[];
    quiet_release_codes: string[];
    quiet_when_client_closed: boolean;
    failed_confirm_still_releases: boolean;
  };
  json: { int64_as: string; token_shown: boolean };
  tests: { ignored_env: string[]; stack_env: string };
}

const CONTRACT: Contract = JSON.parse(readFileSync(new URL("../../../../protos/contract/contract.json", import.meta.url), "utf8"));
const SCOPE = CONTRACT.scope_exit;
const codeOf = (name: string) => (Code as unknown as Record<string, Code>)[name];

describe("socket and deadlines", () => {
  test("default socket, $HOLDFAST_SOCKET, explicit path", () => {
    const env = CONTRACT.socket.env;
    const saved = process.env[env];
    try {
      assert.equal(DEFAULT_SOCKET, CONTRACT.socket.default_path);
      assert.equal(SOCKET_ENV, env);
      delete process.env[env];
      assert.equal(new Client().socketPath, CONTRACT.socket.default_path);
      process.env[env] = "/tmp/from-env.sock";
      assert.equal(new Client().socketPath, "/tmp/from-env.sock");
      assert.equal(new Client({ socketPath: "/tmp/explicit.sock" }).socketPath, "/tmp/explicit.sock");
      assert.equal(new Client({ socketPath: "" }).socketPath, "/tmp/from-env.sock"); // empty: not given
      process.env[env] = "";
      assert.equal(new Client().socketPath, CONTRACT.socket.default_path);
    } finally {
      if (saved === undefined) delete process.env[env];
      else process.env[env] = saved;
    }
  });

  test("default timeout", () => {
    assert.equal(DEFAULT_TIMEOUT_MS, CONTRACT.timeout.default_ms);
    assert.equal(new Client({ socketPath: "/nonexistent" }).timeoutMs, CONTRACT.timeout.default_ms);
  });

  test("timeout_ms rule", () => {
    for (const ex of CONTRACT.timeout.timeout_ms_examples) {
      assert.equal(wireTimeoutMs(ex.left_us / 1000), ex.timeout_ms, `left ${ex.left_us} µs`);
    }
  });

  test("reconnect backoff", () => {
    const b = CONTRACT.reconnect_backoff;
    assert.deepEqual(
      { ...RECONNECT_BACKOFF },
      { initialMs: b.initial_ms, multiplier: b.multiplier, maxMs: b.max_ms, jitter: b.jitter },
    );
    for (const ex of b.nominal_examples) {
      assert.ok(Math.abs(reconnectDelayMs(ex.attempt, 0) - ex.ms) < 1e-9, `attempt ${ex.attempt}`);
      const low = reconnectDelayMs(ex.attempt, 0.999999);
      assert.ok(low >= ex.ms * (1 - b.jitter) - 1e-9 && low < ex.ms, `attempt ${ex.attempt}: ${low}`);
    }
  });
});

describe("codes", () => {
  test("names and retryable, per code", () => {
    for (const c of CONTRACT.codes) {
      assert.equal(Code[c.value], c.name);
      assert.equal(codeName(c.value), c.name);
      const err = new HoldfastError(c.value, "message");
      assert.equal(err.codeName, c.name);
      assert.match(String(err), new RegExp(`\\b${c.name}: message`));
      assert.equal(err.retryable, c.retryable, c.name);
      assert.equal(isRetryable(err), c.retryable, c.name);
      assert.equal(RETRYABLE_CODES.has(c.value), c.retryable, c.name);
    }
    assert.deepEqual([...RETRYABLE_CODES].map(codeName).sort(), [...CONTRACT.retryable_codes].sort());
  });

  test("unknown codes, non-errors, a closed client", () => {
    for (const ex of CONTRACT.code_name.unknown_examples) {
      assert.equal(codeName(ex.value), ex.name);
      const err = new HoldfastError(ex.value as Code, "from a newer daemon");
      assert.equal(err.codeName, ex.name);
      assert.equal(isRetryable(err), false);
    }
    assert.equal(isRetryable(new Error("plain")), false);
    assert.equal(isRetryable(undefined), false);
    assert.equal(isRetryable(new ClientClosedError()), false);
  });
});

describe("leaving a hold's scope", () => {
  let daemon: FakeDaemon;
  let path: string;
  let client: Client;

  beforeEach(async () => {
    path = join(mkdtempSync(join(tmpdir(), "hf-tc-")), "hf.sock");
    daemon = await new FakeDaemon(path).start();
    client = new Client({ socketPath: path });
  });

  afterEach(async () => {
    client.close();
    await daemon.stop();
    rmSync(dirname(path), { recursive: true, force: true });
  });

  const releaseAnswers = (code: Code) => (req: Request) =>
    req.method.case === "release" ? create(ResponseSchema, { id: req.id, code, message: "scripted" }) : okFor(req);
  const methods = () => daemon.requests.map((r) => r.method.case);

  for (const name of SCOPE.quiet_release_codes) {
    test(`${name} from the release is not an error (await using, withHold, close)`, async () => {
      daemon.handler = releaseAnswers(codeOf(name));
      let seen;
      {
        await using h = await client.hold("seat", "p", ["E7"]);
        seen = h;
      }
      assert.equal(seen.active, false);
      await withHold(client, "seat", "p", ["E8"], {}, async () => undefined);
      const h = await client.hold("seat", "p", ["E9"]);
      await h.close();
      assert.deepEqual(methods(), ["hold", "release", "hold", "release", "hold", "release"]);
    });
  }

  test("another failure rejects, unless the body threw", async () => {
    daemon.handler = releaseAnswers(Code.UNAVAILABLE);
    await assert.rejects(
      withHold(client, "seat", "p", ["E7"], {}, async () => undefined),
      (err: unknown) => isRetryable(err) && (err as HoldfastError).code === Code.UNAVAILABLE,
    );
    await assert.rejects(
      withHold(client, "seat", "p", ["E8"], {}, async () => {
        throw new Error("body failed");
      }),
      /body failed/,
    );
    const h = await client.hold("seat", "p", ["E9"]);
    await assert.rejects(h.close(), (err: unknown) => isRetryable(err));
  });

  test("a confirmed or released hold is not released again; a failed confirm is", async () => {
    assert.deepEqual(SCOPE.sends_release_unless, ["released through the hold", "confirmed through the hold"]);
    assert.ok(SCOPE.failed_confirm_still_releases);
    const r = await withHold(client, "seat", "p", ["E7"], {}, (hold) => hold.confirm({ idempotencyKey: "k1" }));
    assert.equal(r.fence, 1n);
    {
      await using h = await client.hold("seat", "p", ["E8"]);
      await h.release();
    }
    assert.deepEqual(methods(), ["hold", "confirm", "hold", "release"]);

    daemon.handler = (req) =>
      req.method.case === "confirm" ? create(ResponseSchema, { id: req.id, code: Code.CONFLICT, message: "sold elsewhere" }) : okFor(req);
    await assert.rejects(
      withHold(client, "seat", "p", ["E9"], {}, (hold) => hold.confirm({ idempotencyKey: "k2" })),
      (err: unknown) => err instanceof HoldfastError && err.code === Code.CONFLICT,
    );
    assert.deepEqual(methods().slice(4), ["hold", "confirm", "release"]);
  });

  test("a closed client is not an error", async () => {
    assert.ok(SCOPE.quiet_when_client_closed);
    const h = await client.hold("seat", "p", ["E7"]);
    client.close();
    await h.close();
    assert.equal(h.active, false);
  });

  test("results serialise to JSON: 64-bit fields as strings, no token", async () => {
    assert.equal(CONTRACT.json.int64_as, "string");
    const h = await client.hold("seat", "p", seats(["E7", "E8"]));
    const r = await h.confirm({ idempotencyKey: "k3", reference: "order-1" });
    const json = JSON.parse(JSON.stringify(r));
    assert.deepEqual(json, {
      fence: "1",
      replayed: false,
      claims: [
        { resourceId: "E7", fence: "1", reference: "order-1", confirmedAtUnixMs: 1764547200000 },
        { resourceId: "E8", fence: "1", reference: "order-1", confirmedAtUnixMs: 1764547200000 },
      ],
      units: {},
      confirmedAtUnixMs: 1764547200000,
    });
    assert.deepEqual(JSON.parse(JSON.stringify(r.claims[0])).fence, "1");
    // The result's fields stay bigints for code, and toJSON stays out of the way.
    assert.equal(r.fence, 1n);
    assert.deepEqual(Object.keys(r), ["fence", "replayed", "claims", "units", "confirmedAtUnixMs"]);
    assert.equal(JSON.parse(JSON.stringify(h)).fence, "1");
    assert.ok(!JSON.stringify(h).includes(h.token));
    // Anything else with bigints (e.g. raw pb messages): the replacer.
    assert.equal(JSON.stringify({ id: 2n ** 63n + 5n }, jsonReplacer), '{"id":"9223372036854775813"}');
  });
});

test("live tests never use HOLDFAST_SOCKET", () => {
  assert.equal(TEST_STACK_ENV, CONTRACT.tests.stack_env);
  assert.deepEqual(CONTRACT.tests.ignored_env, ["HOLDFAST_SOCKET"]);
  const real = { HOLDFAST_SOCKET: "/run/holdfast/holdfast.sock" };
  assert.ok(["own", "skip"].includes(stackChoice(real).kind));
  assert.deepEqual(stackChoice({ ...real, [TEST_STACK_ENV]: "/tmp/stack" }), { kind: "given", dir: "/tmp/stack" });
});
