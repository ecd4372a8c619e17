// Seat reservation with holdfast: hold E7-E9 all or nothing as a session hold
// (the daemon keeps it while this process is connected, however long the
// customer takes to pay, and frees it at once if the process dies), waiting
// briefly in line if someone else is mid-checkout on them, confirm with an
// idempotency key, and handle a conflict.
//
//   npm run build && HOLDFAST_SOCKET=/run/holdfast/holdfast.sock node dist/examples/seat-reservation.js [RUN]
//
// Each run books on a run (partition) of its own, so it works again and again
// on the same daemon. Exits 1 when the first order was not booked. It uses
// withHold, which runs on Node 20 with any TypeScript setup; `await using
// hold = await client.hold(...)` does the same where the compiler allows it
// (see the README). The confirm retry below is not a wait for the seats: it
// resends a confirm whose outcome is unknown (UNAVAILABLE, DEADLINE_EXCEEDED)
// with the same idempotency key.

import { randomUUID } from "node:crypto";

import { Client, Code, isHoldfastError, isRetryable, seats, withHold, type ConfirmResult, type Hold } from "../src/index.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Stand-in for the payment provider: takes a moment. */
async function pay(_orderId: string): Promise<void> {
  await sleep(200);
}

async function confirmWithRetry(hold: Hold, orderId: string, attempts = 3): Promise<ConfirmResult> {
  // The idempotency key belongs to the order, not to the attempt: a retry
  // after a timeout either commits once or returns the stored result.
  const idempotencyKey = `${orderId}:confirm`;
  for (let attempt = 1; ; attempt++) {
    try {
      return await hold.confirm(
        { idempotencyKey, reference: orderId, payload: new TextEncoder().encode('{"channel":"web"}') },
        { timeoutMs: 5000 },
      );
    } catch (err) {
      if (!isRetryable(err) || attempt >= attempts) throw err;
      console.error(`confirm attempt ${attempt} unsure (${err.codeName}); retrying with the same key`);
      await sleep(200 * attempt);
    }
  }
}

async function reserve(client: Client, run: string, ids: string[], orderId: string): Promise<boolean> {
  try {
    // All or nothing: either every seat is ours or none is. Leaving withHold
    // without confirming (an exception, a cancelled payment) releases them.
    // session: no TTL to pick and no extend to call while the customer pays;
    // wait: another checkout holding a seat may finish or give up first.
    const opts = {
      session: true,
      wait: 2000,
      correlationId: orderId,
      onLost: (_: Hold, err: Error) => console.error(`lost the seats while paying: ${err.message}`),
    };
    const result = await withHold(client, "seat", run, seats(ids), opts, async (hold) => {
      console.error(`held ${ids.join(", ")} on ${run} (fence ${hold.fence}, session TTL ${hold.ttlMs} ms)`);
      await pay(orderId);
      if (hold.lost) throw hold.lost; // the daemon could not keep it: do not charge
      return confirmWithRetry(hold, orderId);
    });
    console.error(`confirmed ${result.claims.length} seats${result.replayed ? " (replayed)" : ""}: ${JSON.stringify(result)}`);
    return true;
  } catch (err) {
    if (isHoldfastError(err, Code.HELD_BY_ANOTHER)) {
      console.error(`seat ${err.resourceId} is still being booked by someone else after waiting; pick other seats`);
    } else if (isHoldfastError(err, Code.CONFIRMED)) {
      console.error(`seat ${err.resourceId} is already sold`);
    } else if (isHoldfastError(err, Code.CONFLICT, Code.HOLD_LOST, Code.NOT_HELD)) {
      // The hold was lost while paying and someone else got the seat: refund.
      console.error(`lost the seats before confirming (${err.codeName}): refund order ${orderId}`);
    } else {
      throw err;
    }
    return false;
  }
}

async function main(): Promise<void> {
  const run = process.argv[2] ?? `run-2026-12-01-KTX101-${randomUUID().slice(0, 6)}`;
  const client = new Client(); // socket: $HOLDFAST_SOCKET or /run/holdfast/holdfast.sock
  try {
    const first = await reserve(client, run, ["E7", "E8", "E9"], `order-${randomUUID().slice(0, 8)}`);
    // A second customer asks for an overlapping block: the conflict is handled.
    const second = await reserve(client, run, ["E9", "E10"], `order-${randomUUID().slice(0, 8)}`);
    console.log(`first order: ${first ? "booked" : "not booked"}; second order: ${second ? "booked" : "not booked"}`);
    if (!first) process.exitCode = 1;
  } finally {
    client.close();
  }
}

main().catch((err) => {
  console.error(String(err));
  process.exitCode = 1;
});
