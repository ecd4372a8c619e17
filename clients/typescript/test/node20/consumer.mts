// A consumer on Node 20 without `await using`: the fallbacks of the client
// contract's scope-exit rule. Compiled by test/node20.test.ts with the plain
// tsconfig.json beside it; prints one line per step.

import { Client, isRetryable, seats, units, withHold } from "../../dist/src/index.js";

const client = new Client({ socketPath: process.argv[2] });
try {
  // withHold: confirmed inside, so nothing is released afterwards.
  const result = await withHold(client, "seat", "p", seats(["E7"]), { ttlMs: 60_000 }, (hold) =>
    hold.confirm({ idempotencyKey: "order-1:confirm", reference: "order-1" }),
  );
  console.log(`confirmed ${JSON.stringify(result)}`);

  // withHold: the body throws; the hold is released and the body's error wins.
  try {
    await withHold(client, "seat", "p", ["E8"], {}, async () => { // a plain array is seats
      throw new Error("payment declined");
    });
  } catch (err) {
    console.log(`body error kept: ${(err as Error).message}`);
  }

  // try/finally with hold.close(): released at the end.
  const hold = await client.hold("seat", "p", seats(["E9"]));
  try {
    console.log(`held ${hold.target.kind === "seats" ? hold.target.ids.join(",") : ""} fence ${hold.fence}`);
  } finally {
    await hold.close();
  }
  console.log(`active after close: ${hold.active}, retryable(new Error): ${isRetryable(new Error("x"))}`);

  // A session hold that waits in line, left with close() in a finally.
  const session = await client.hold("seat", "p", seats(["E10"]), { session: true, wait: 1000, onLost: () => console.log("lost") });
  try {
    console.log(`session ${session.session}, lost ${session.lost === undefined ? "no" : "yes"}`);
  } finally {
    await session.close();
  }

  // Pool units with the same withHold: confirmed inside.
  const sold = await withHold(client, "ga", "show", units({ adult: 2, child: 1 }), {}, (tickets) =>
    tickets.confirm({ idempotencyKey: "order-2:confirm", reference: "order-2" }),
  );
  console.log(`sold ${JSON.stringify(sold.units)}`);
} finally {
  client.close();
}
