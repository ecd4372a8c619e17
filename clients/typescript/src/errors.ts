// Errors: every failed call rejects with a HoldfastError carrying the wire code.

import { Code } from "./gen/holdfast/v1/holdfast_pb.js";

export { Code };

/**
 * Name of a code without the CODE_ prefix, e.g. "HELD_BY_ANOTHER"; a value
 * this client does not know (a newer daemon) is "CODE_99".
 */
export function codeName(code: number): string {
  return Code[code] ?? `CODE_${code}`;
}

/**
 * Codes where sending the same call again (after a wait, a bounded number of
 * times) may succeed; a confirm or cancel only with the same idempotency key.
 * See protos/contract/client-contract.md for why these three.
 */
export const RETRYABLE_CODES: ReadonlySet<Code> = new Set([Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED, Code.RESOURCE_EXHAUSTED]);

export interface HoldfastErrorInit {
  field?: string;
  resourceId?: string;
  correlationId?: string;
  /** The response's result message when the daemon sent one (e.g. a partial Release). */
  result?: unknown;
  cause?: unknown;
}

/**
 * A call did not succeed; `code` says why (compare with `Code.HELD_BY_ANOTHER`, ...).
 * The message never contains a token.
 *
 * `UNAVAILABLE` and `DEADLINE_EXCEEDED` can mean the outcome is unknown:
 * retry a confirm with the same idempotency key.
 */
export class HoldfastError extends Error {
  readonly code: Code;
  readonly field: string;
  readonly resourceId: string;
  correlationId: string;
  readonly result: unknown;

  constructor(code: Code, message: string, init: HoldfastErrorInit = {}) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "HoldfastError";
    this.code = code;
    this.field = init.field ?? "";
    this.resourceId = init.resourceId ?? "";
    this.correlationId = init.correlationId ?? "";
    this.result = init.result;
  }

  /** "HELD_BY_ANOTHER" etc. */
  get codeName(): string {
    return codeName(this.code);
  }

  /**
   * True for UNAVAILABLE, DEADLINE_EXCEEDED and RESOURCE_EXHAUSTED: the same
   * call may succeed when sent again after a wait. Retry a confirm or cancel
   * only with the same idempotency key.
   */
  get retryable(): boolean {
    return RETRYABLE_CODES.has(this.code);
  }

  override toString(): string {
    const extra: string[] = [];
    if (this.field) extra.push(`field=${this.field}`);
    if (this.resourceId) extra.push(`resource_id=${this.resourceId}`);
    if (this.correlationId) extra.push(`correlation_id=${this.correlationId}`);
    const tail = extra.length ? ` (${extra.join(", ")})` : "";
    return `${this.name} ${this.codeName}: ${this.message}${tail}`;
  }
}

/** The client was closed; create a new one. Code FAILED_PRECONDITION. */
export class ClientClosedError extends HoldfastError {
  constructor(message = "holdfast client is closed") {
    super(Code.FAILED_PRECONDITION, message);
    this.name = "ClientClosedError";
  }
}

/** True when `err` is a HoldfastError whose code is retryable (see RETRYABLE_CODES). */
export function isRetryable(err: unknown): err is HoldfastError {
  return err instanceof HoldfastError && err.retryable;
}

/** True when `err` is a HoldfastError, optionally with one of `codes`. */
export function isHoldfastError(err: unknown, ...codes: Code[]): err is HoldfastError {
  return err instanceof HoldfastError && (codes.length === 0 || codes.includes(err.code));
}
