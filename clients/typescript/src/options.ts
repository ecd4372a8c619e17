// The options of the client and of its calls.

import type { HoldfastError } from "./errors.js";
import type { Hold } from "./hold.js";
import type { Segment } from "./target.js";

export interface ClientOptions {
  /** Default (also for ""): $HOLDFAST_SOCKET, else /run/holdfast/holdfast.sock. */
  socketPath?: string;
  /** Deadline of a call when it gives none (ms). Default 5000. */
  timeoutMs?: number;
  /** Longest wait for one connect attempt (ms). Default 1000. */
  connectTimeoutMs?: number;
}

export interface CallOptions {
  /** Deadline for this call (ms): sent to the daemon and enforced here. */
  timeoutMs?: number;
  /** Trace id logged by the daemon; a random one is generated when omitted. */
  correlationId?: string;
  /**
   * W3C traceparent ("00-<trace-id>-<parent-id>-<flags>") of this call, sent
   * as given. Omitted: the active OpenTelemetry span's when @opentelemetry/api
   * is installed, else none; "": none.
   */
  traceparent?: string;
  /** Stop waiting when aborted (the request may still take effect). */
  signal?: AbortSignal;
}

/** Called once when a session hold is lost; `hold.lost` is `err` by then. */
export type OnLost<H = Hold> = (hold: H, err: HoldfastError) => void | Promise<void>;

export interface HoldOptions extends CallOptions {
  /** 0 or omitted: the namespace's default TTL. Not with `session`. */
  ttlMs?: number;
  /**
   * Wait in line (ms, docs/waiting.md): when a resource (or a pool's units)
   * is held by another token, queue behind it for up to this long instead
   * of failing with HELD_BY_ANOTHER at once; all or nothing, in arrival
   * order. When the wait runs out the call rejects with HELD_BY_ANOTHER as
   * without a wait (CONFIRMED when sold). The call's deadline becomes at
   * least `wait` + WAIT_MARGIN_MS. 0 or omitted: no wait.
   */
  wait?: number;
  /**
   * Seats only: bind the hold to this client's connection
   * (docs/sessions.md): the daemon renews it while the connection lives and
   * releases it at once when the connection closes (the client is closed,
   * the process exits or is killed). `ttlMs` must then be 0 or omitted.
   * When the daemon reports it lost, or the connection ends, `hold.lost`
   * becomes the error that says why and `onLost` runs once.
   */
  session?: boolean;
  /**
   * With `session`: called once when the hold is lost (from the client's
   * socket reader, or from `client.close()`: keep it short). An exception it
   * throws is reported with `process.emitWarning`.
   */
  onLost?: OnLost<Hold>;
  /** @deprecated give it in the target: `seats(ids, segment)` (only with a plain array of ids). */
  segment?: Segment;
}

export interface ConfirmOptions {
  /** The caller's key, kept across retries of the same confirm. Never the token. */
  idempotencyKey: string;
  reference?: string;
  payload?: Uint8Array;
}

export interface CancelOptions {
  /** The caller's key, kept across retries of the same cancel. */
  idempotencyKey: string;
  /** The reference the claims (or units) were confirmed with: the order a refund is for. */
  reference?: string;
  /** @deprecated give it in the target: `seats(ids, segment)` (only with a plain array of ids). */
  segment?: Segment;
}

export interface StatusOptions extends CallOptions {
  /** Learn which resources (or how many units) this token holds. */
  token?: string;
  /** @deprecated give it in the target: `seats(ids, segment)` (only with a plain array of ids). */
  segment?: Segment;
}
