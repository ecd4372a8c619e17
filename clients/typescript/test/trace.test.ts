// Trace context (contract.json "trace_context"): the call's own traceparent,
// else the active OpenTelemetry span's (@opentelemetry/api, a dev dependency
// here), else none; on the wire through the fake daemon. Without the API: a
// child process whose module resolution cannot find it (test/no-otel/).

import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, afterEach, before, beforeEach, test } from "node:test";
import { promisify } from "node:util";

import { ROOT_CONTEXT, context, trace, TraceFlags, type Context, type ContextManager, type Span } from "@opentelemetry/api";
import { Client, withHold } from "../src/index.js";
import { FakeDaemon } from "./fake-daemon.js";

interface TraceCase {
  explicit: string | null;
  otel: { trace_id: string; span_id: string; sampled: boolean } | null;
  traceparent: string;
}
const CONTRACT: { field: string; opentelemetry_required: boolean; cases: TraceCase[] } = JSON.parse(
  readFileSync(new URL("../../../../protos/contract/contract.json", import.meta.url), "utf8"),
).trace_context;
const TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/** What an OpenTelemetry SDK registers on Node: the active context follows async calls. */
class TestContextManager implements ContextManager {
  private readonly als = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.als.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.als.run(ctx, () => fn.apply(thisArg, args));
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.als.disable();
    return this;
  }
}

function span(traceId: string, spanId: string, sampled = true): Span {
  return trace.wrapSpanContext({ traceId, spanId, traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE });
}

function inSpan<T>(s: Span | null, fn: () => Promise<T>): Promise<T> {
  return context.with(s ? trace.setSpan(context.active(), s) : ROOT_CONTEXT, fn);
}

let daemon: FakeDaemon;
let path: string;

before(() => {
  assert.ok(context.setGlobalContextManager(new TestContextManager()));
});
after(() => {
  context.disable();
});
beforeEach(async () => {
  path = join(mkdtempSync(join(tmpdir(), "hf-tr-")), "hf.sock");
  daemon = await new FakeDaemon(path).start();
});
afterEach(async () => {
  await daemon.stop();
  rmSync(dirname(path), { recursive: true, force: true });
});

test("contract: trace_context", () => {
  assert.equal(CONTRACT.field, "traceparent");
  assert.equal(CONTRACT.opentelemetry_required, false);
});

test("contract cases: the call's own, else the active span's, else none", async () => {
  const client = new Client({ socketPath: path });
  try {
    for (const [i, c] of CONTRACT.cases.entries()) {
      const s = c.otel ? span(c.otel.trace_id, c.otel.span_id, c.otel.sampled) : null;
      await inSpan(s, () => client.health(c.explicit === null ? {} : { traceparent: c.explicit }));
      assert.equal(daemon.requests[i]!.traceparent, c.traceparent, `case ${i}`);
    }
  } finally {
    await client.close();
  }
});

test("every call through a hold takes the context of that call", async () => {
  const t = "0af7651916cd43dd8448eb211c80319c";
  const client = new Client({ socketPath: path });
  try {
    const h = await inSpan(span(t, "00000000000000a1"), () => client.hold("seat", "p", ["E7"]));
    await inSpan(span(t, "00000000000000b2"), async () => {
      await h.extend(1000);
      await h.status({ traceparent: TP });
    });
    await inSpan(span(t, "00000000000000c3", false), () => h.close());
    await inSpan(span(t, "00000000000000d4"), () =>
      withHold(client, "seat", "p", ["E8"], {}, (h2) => h2.confirm({ idempotencyKey: "k" })),
    );
    await client.health(); // outside any span
  } finally {
    await client.close();
  }
  assert.deepEqual(
    daemon.requests.map((r) => [r.method.case, r.traceparent]),
    [
      ["hold", `00-${t}-00000000000000a1-01`],
      ["extend", `00-${t}-00000000000000b2-01`],
      ["status", TP],
      ["release", `00-${t}-00000000000000c3-00`],
      ["hold", `00-${t}-00000000000000d4-01`],
      ["confirm", `00-${t}-00000000000000d4-01`],
      ["health", ""],
    ],
  );
});

test("a traceparent that is not a string is refused before sending", async () => {
  const client = new Client({ socketPath: path });
  try {
    await assert.rejects(client.health({ traceparent: 42 as unknown as string }), TypeError);
  } finally {
    await client.close();
  }
  assert.equal(daemon.requests.length, 0);
});

test("without @opentelemetry/api the client works unchanged", async () => {
  const dir = dirname(fileURLToPath(import.meta.url)); // dist/test
  const run = await promisify(execFile)(
    process.execPath,
    ["--import", join(dir, "no-otel", "register.js"), join(dir, "no-otel", "consumer.js"), path, TP],
    { encoding: "utf8", timeout: 60_000 },
  );
  // The consumer looked for the API, and so did the client (and went on without it).
  assert.equal(run.stderr.match(/no-otel: refused @opentelemetry\/api/g)?.length, 2, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout.trim().split("\n").pop()!), {
    otelRefused: true,
    traceparents: [
      ["hold", ""],
      ["release", ""],
      ["health", TP],
      ["health", ""],
    ],
  });
});
