// The hold handle (surface.json "hold"): one class for seats and units alike,
// made by client.hold (granted) or client.resume (a token from elsewhere).

import { inspect } from "node:util";

import { Code } from "./gen/holdfast/v1/holdfast_pb.js";
import { CALL, type Caller } from "./call.js";
import type { Client } from "./client.js";
import { ClientClosedError, HoldfastError } from "./errors.js";
import type { CallOptions, ConfirmOptions, HoldOptions, OnLost } from "./options.js";
import { confirmResult, statusResult, type ConfirmResult, type StatusResult } from "./results.js";
import { SESSION_LOST, type SessionHolds, type SessionMember } from "./session.js";
import { describeTarget, nameFields, takeFields, type Target } from "./target.js";

// Node 20 ships Symbol.asyncDispose; older runtimes get the well-known
// registry symbol that TypeScript's `await using` helper also looks up.
(Symbol as { asyncDispose?: symbol }).asyncDispose ??= Symbol.for("Symbol.asyncDispose");

// Release answers that mean "this token holds none of it any more".
const SCOPE_EXIT_QUIET: ReadonlySet<Code> = new Set([Code.NOT_HELD, Code.HELD_BY_ANOTHER, Code.CONFIRMED]);

/** @internal How client.hold binds a session hold to its connection. */
export const BIND_SESSION = Symbol("holdfast.bindSession");

/**
 * A hold of seats or of units. `await using hold = await client.hold(...)`
 * (or `withHold`, or `hold.close()` in a `finally`) releases it when the
 * scope ends, unless it was released or confirmed through it. Its extend,
 * release, confirm and status act on its own `target` (the same legs, the
 * same units). The token is `hold.token`, never shown by inspect, JSON or
 * toString. A session hold (`session: true`) also has `lost`.
 */
export class Hold implements AsyncDisposable, SessionMember {
  #client: Caller;
  #token: string;
  #active = true;
  #session: SessionHolds | null = null;
  #onLost: OnLost<Hold> | undefined;
  #lost: HoldfastError | undefined;

  /** @internal Made by `client.hold` and `client.resume`. */
  constructor(
    client: Caller,
    readonly namespace: string,
    readonly partition: string,
    /** What the hold covers: `seats(ids, segment?)` or `units({...})`. */
    readonly target: Target,
    token: string,
    readonly fence: bigint,
    /** The TTL last set (ms); 0 for a resumed hold until its first extend. */
    public ttlMs: number,
    readonly correlationId: string,
    readonly degraded = false,
  ) {
    this.#client = client;
    this.#token = token;
  }

  /** Proof of ownership. Keep it secret: do not log it. */
  get token(): string {
    return this.#token;
  }

  /** False once released or confirmed through this object. */
  get active(): boolean {
    return this.#active;
  }

  /** True for a session hold (`session: true`), bound to the connection that took it. */
  get session(): boolean {
    return this.#session !== null;
  }

  /**
   * A session hold the daemon reported lost, or whose connection ended: the
   * error that says why (code NOT_HELD, HELD_BY_ANOTHER or CONFIRMED, with
   * `resourceId`; UNAVAILABLE when the connection ended). Undefined while it
   * is held, and always for a hold that is not a session hold. Treat a lost
   * hold as gone: take a new one.
   */
  get lost(): HoldfastError | undefined {
    return this.#lost;
  }

  /** Stretch the hold's TTL (owner-checked, all or nothing); resolves to the TTL applied. */
  async extend(ttlMs = 0, opts: CallOptions = {}): Promise<number> {
    const [r] = await this.#client[CALL]("extend", { ...this.#fields(), ...nameFields(this.target), ttlMs }, this.#opts(opts));
    this.ttlMs = r.ttlMs;
    return r.ttlMs;
  }

  /** Give the hold back (owner-checked); resolves to the ids (legs) or units released. */
  async release(opts: CallOptions = {}): Promise<number> {
    const [r] = await this.#client[CALL]("release", { ...this.#fields(), ...nameFields(this.target) }, this.#opts(opts));
    this.#finish();
    return r.released;
  }

  /**
   * Turn the hold into a durable claim (seats) or sale (units) in
   * PostgreSQL. After UNAVAILABLE/DEADLINE_EXCEEDED retry with the same
   * idempotencyKey: a confirm that committed answers again (`replayed: true`).
   */
  async confirm(confirm: ConfirmOptions, opts: CallOptions = {}): Promise<ConfirmResult> {
    if (!confirm.idempotencyKey) {
      throw new HoldfastError(Code.INVALID_ARGUMENT, "idempotencyKey is required", { field: "idempotency_key" });
    }
    const fields = {
      ...this.#fields(),
      ...takeFields(this.target),
      idempotencyKey: confirm.idempotencyKey,
      reference: confirm.reference ?? "",
      payload: confirm.payload ?? new Uint8Array(0),
    };
    const [r] = await this.#client[CALL]("confirm", fields, this.#opts(opts));
    this.#finish(); // the daemon released/marked the hold after committing
    return confirmResult(r);
  }

  /** The target's state as Redis has it, with what this hold owns (a diagnostic). */
  async status(opts: CallOptions = {}): Promise<StatusResult> {
    const [r] = await this.#client[CALL]("status", { ...this.#fields(), ...nameFields(this.target) }, this.#opts(opts));
    return statusResult(r);
  }

  /**
   * Leaves the hold's scope (the client contract): releases the hold unless
   * it was released or confirmed through this object. A hold that expired
   * (NOT_HELD), was taken over since (HELD_BY_ANOTHER) or sold (CONFIRMED),
   * and a closed client, are not errors here; any other failure rejects (the
   * hold then expires with its TTL). `await using` calls it; so does
   * `withHold`; call it in a `finally` where neither is available.
   */
  async close(opts: CallOptions = {}): Promise<void> {
    if (!this.#active) return;
    try {
      await this.release(opts);
    } catch (err) {
      if (err instanceof ClientClosedError || (err instanceof HoldfastError && SCOPE_EXIT_QUIET.has(err.code))) {
        this.#finish();
        return;
      }
      throw err;
    }
  }

  /**
   * What `await using` calls: `close()`. Defined under `Symbol.asyncDispose`,
   * which this package sets to `Symbol.for("Symbol.asyncDispose")` on a
   * runtime without it (as TypeScript's downlevel helper expects).
   */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** @internal */
  [BIND_SESSION](sessions: SessionHolds, onLost: OnLost<Hold> | undefined): void {
    this.#session = sessions;
    this.#onLost = onLost;
    sessions.register(this);
  }

  /** @internal Called by the connection's SessionHolds. */
  [SESSION_LOST](err: HoldfastError): void {
    if (!this.#active || this.#lost !== undefined) return;
    this.#lost = err;
    const onLost = this.#onLost;
    if (onLost === undefined) return;
    const warn = (e: unknown) =>
      process.emitWarning(`holdfast: onLost callback failed (correlation id ${this.correlationId}): ${String(e)}`, "HoldfastWarning");
    try {
      const r = onLost(this, err);
      if (r && typeof (r as Promise<void>).then === "function") (r as Promise<void>).then(undefined, warn);
    } catch (e) {
      warn(e); // a callback's bug must not break the connection's reader
    }
  }

  toJSON(): Record<string, unknown> {
    return {
      namespace: this.namespace,
      partition: this.partition,
      target: this.target,
      fence: this.fence.toString(),
      ttlMs: this.ttlMs,
      degraded: this.degraded,
      correlationId: this.correlationId,
      active: this.#active,
      ...(this.session ? { session: true, lost: this.#lost ? this.#lost.codeName : null } : {}),
    };
  }

  toString(): string {
    const session = this.session ? ` session${this.#lost ? ` lost=${this.#lost.codeName}` : ""}` : "";
    const state = `fence=${this.fence}${session}${this.#active ? "" : " finished"}`;
    return `Hold(${this.namespace}/${this.partition} ${describeTarget(this.target)} ${state})`;
  }

  [inspect.custom](): string {
    return this.toString();
  }

  #fields() {
    return { namespace: this.namespace, partition: this.partition, token: this.#token };
  }

  /** A call through the hold logs under the hold's correlation id unless told otherwise. */
  #opts(opts: CallOptions): CallOptions {
    return opts.correlationId === undefined ? { ...opts, correlationId: this.correlationId } : opts;
  }

  /** The hold is done (released, confirmed): not ours to release, nor to report. */
  #finish(): void {
    this.#active = false;
    this.#session?.forget(this);
  }
}

/**
 * Takes a hold (of seats or units), runs `fn` with it and leaves the hold's
 * scope afterwards (`hold.close()`): released unless `fn` confirmed or
 * released it. Works on Node 20 and any TypeScript target, without `await
 * using`. When `fn` throws, that error is what rejects, even if the release
 * failed too.
 *
 *     const booked = await withHold(client, "seat", run, seats(["E7"]), { ttlMs: 60_000 }, async (hold) => {
 *       await pay();
 *       return hold.confirm({ idempotencyKey: `${orderId}:confirm` });
 *     });
 */
export async function withHold<T>(
  client: Client,
  namespace: string,
  partition: string,
  target: Target | readonly string[],
  opts: HoldOptions,
  fn: (hold: Hold) => Promise<T>,
): Promise<T> {
  const hold = await client.hold(namespace, partition, target, opts);
  let result: T;
  try {
    result = await fn(hold);
  } catch (err) {
    await hold.close().catch(() => undefined); // the body's error is the one that matters
    throw err;
  }
  await hold.close();
  return result;
}
