// The client contract's constants and rules (protos/contract/client-contract.md,
// contract.json): the same in every holdfast client, checked by contract.test.ts.

import { randomFillSync } from "node:crypto";

const MAX_TIMEOUT_MS = 2 ** 32 - 1;

export const DEFAULT_SOCKET = "/run/holdfast/holdfast.sock";
/** The environment variable naming the daemon's socket. */
export const SOCKET_ENV = "HOLDFAST_SOCKET";
/** Deadline of a call that gives none (ms). */
export const DEFAULT_TIMEOUT_MS = 5000;
/**
 * A hold that waits in line (`wait`) gets a deadline of at least its wait
 * plus this (ms): time for the daemon to answer once the wait runs out, so
 * the client does not give up first.
 */
export const WAIT_MARGIN_MS = 1000;

/** Waits between connection attempts while the daemon is away. */
export const RECONNECT_BACKOFF = Object.freeze({ initialMs: 20, multiplier: 2, maxMs: 500, jitter: 0.2 });

/**
 * Milliseconds to wait before connection attempt `attempt` + 1 (0-based), for
 * a uniform random `u` in [0, 1): the nominal wait shortened by the jitter.
 */
export function reconnectDelayMs(attempt: number, u: number): number {
  const b = RECONNECT_BACKOFF;
  const nominal = Math.min(b.maxMs, b.initialMs * b.multiplier ** Math.min(attempt, 64));
  return nominal * (1 - b.jitter * u);
}

/** The request's timeout_ms for `leftMs` ms until the deadline: rounded up, 1 .. 2^32-1 (never 0). */
export function wireTimeoutMs(leftMs: number): number {
  return Math.max(1, Math.min(MAX_TIMEOUT_MS, Math.ceil(leftMs)));
}

export function checkTimeout(ms: number): number {
  if (!(ms > 0) || !Number.isFinite(ms)) throw new RangeError(`timeoutMs must be > 0, got ${ms}`);
  return ms;
}

// Random bytes for correlation ids, drawn a few KiB at a time.
const idBytes = Buffer.alloc(4096);
let idBytesUsed = idBytes.length;

/** A random correlation id: 32 lowercase hex digits. */
export function newCorrelationId(): string {
  if (idBytesUsed + 16 > idBytes.length) {
    randomFillSync(idBytes);
    idBytesUsed = 0;
  }
  idBytesUsed += 16;
  return idBytes.toString("hex", idBytesUsed - 16, idBytesUsed);
}
