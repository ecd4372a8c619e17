// Run by trace.test.ts without @opentelemetry/api (see register.ts): the
// fake daemon and a client in one process; prints what reached the daemon.

import { Client, withHold } from "../../src/index.js";
import { FakeDaemon } from "../fake-daemon.js";

const [path, tp] = process.argv.slice(2) as [string, string];
let otelRefused = false;
try {
  await import("@opentelemetry/api" as string);
} catch {
  otelRefused = true;
}
const daemon = await new FakeDaemon(path).start();
const client = new Client({ socketPath: path });
try {
  await withHold(client, "seat", "p", ["E7"], {}, async () => {});
  await client.health({ traceparent: tp });
  await client.health();
} finally {
  await client.close();
  await daemon.stop();
}
console.log(JSON.stringify({ otelRefused, traceparents: daemon.requests.map((r) => [r.method.case, r.traceparent]) }));
