// The holdfast client (surface.json "client"): one connection to one daemon,
// async/await, every operation taking a target (seats or units).

import { Code, type Response } from "./gen/holdfast/v1/holdfast_pb.js";
import { Admin } from "./admin.js";
import { CALL, type Caller, type Method, type MethodValue, type ResultValue } from "./call.js";
import { ClientClosedError, HoldfastError } from "./errors.js";
import { Connection, UnsentError } from "./connection.js";
import {
  DEFAULT_SOCKET,
  DEFAULT_TIMEOUT_MS,
  SOCKET_ENV,
  WAIT_MARGIN_MS,
  checkTimeout,
  newCorrelationId,
  reconnectDelayMs,
  wireTimeoutMs,
} from "./contract.js";
import { encodeCall } from "./frame.js";
import { BIND_SESSION, Hold } from "./hold.js";
import type { CallOptions, CancelOptions, ClientOptions, HoldOptions, StatusOptions } from "./options.js";
import { cancelResult, capacities, health, statusResult, type CancelResult, type Capacities, type Health, type StatusResult } from "./results.js";
import { asTarget, nameFields, takeFields, type Target } from "./target.js";
import { traceparentNow } from "./trace.js";

const MAX_UINT32 = 2 ** 32 - 1;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Talks to holdfastd over its Unix socket. One connection carries many calls
 * in flight; after the daemon restarts the next call reconnects on its own.
 * Failed calls reject with HoldfastError (`err.code`).
 */
export class Client implements AsyncDisposable, Caller {
  readonly socketPath: string;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  private conn: Connection | null = null;
  private connecting: Promise<Connection> | null = null;
  private closedFlag = false;
  private lastId = 0;
  private lastConnectError: Error | null = null;
  #admin: Admin | undefined;

  constructor(opts: ClientOptions = {}) {
    this.socketPath = opts.socketPath || process.env[SOCKET_ENV] || DEFAULT_SOCKET;
    this.timeoutMs = checkTimeout(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 1000;
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /**
   * Close the connection; calls still waiting reject with ClientClosedError.
   * Holds expire with their TTL; the daemon releases the connection's
   * session holds, and each is reported lost (`hold.lost`, code UNAVAILABLE;
   * its `onLost` runs from here).
   */
  close(): void {
    this.closedFlag = true;
    this.conn?.close();
    this.conn = null;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
  }

  // ---- the surface (surface.json "client") ------------------------------------

  /**
   * Hold a target in one partition, all or nothing: `seats(["E7", "E8"])`
   * (a plain array of ids is seats too), legs of seats `seats(["E7"],
   * { fromStop: 0, toStop: 2 })` in a namespace with max_legs, or units of
   * pools `units({ adult: 2, child: 1 })` in a namespace of kind "pools".
   * `await using` releases it. Refused with HELD_BY_ANOTHER (`wait` to queue)
   * or CONFIRMED (sold), `err.resourceId` naming the id, leg or pool.
   * `session: true` (seats only) binds the hold to this client's connection.
   */
  async hold(namespace: string, partition: string, target: Target | readonly string[], opts: HoldOptions = {}): Promise<Hold> {
    const t = asTarget(target, opts.segment);
    const session = opts.session === true;
    if (session && t.kind === "units") {
      throw new HoldfastError(Code.INVALID_ARGUMENT, "pool holds cannot be session holds", { field: "session" });
    }
    if (session && opts.ttlMs) {
      // The daemon refuses it too: a session hold's TTL is the namespace's
      // session_ttl_ms, renewed while the connection lives.
      throw new HoldfastError(Code.INVALID_ARGUMENT, "a session hold takes no ttlMs", { field: "ttl_ms" });
    }
    if (opts.onLost !== undefined && typeof opts.onLost !== "function") throw new TypeError("onLost must be a function");
    const wait = checkWait(opts.wait);
    const timeoutMs = checkTimeout(opts.timeoutMs ?? this.timeoutMs);
    const correlationId = opts.correlationId ?? newCorrelationId();
    const [r, resp, conn] = await this[CALL](
      "hold",
      { namespace, partition, ...takeFields(t), ttlMs: opts.ttlMs ?? 0, session, waitMs: wait },
      opts,
      wait > 0 ? Math.max(timeoutMs, wait + WAIT_MARGIN_MS) : timeoutMs, // long enough for its wait
      correlationId,
    );
    const h = new Hold(this, namespace, partition, t, r.token, r.fence, r.ttlMs, correlationId, resp.degraded);
    // A degraded answer held nothing, so there is nothing to keep.
    if (session && !resp.degraded) h[BIND_SESSION](conn.sessions, opts.onLost);
    return h;
  }

  /**
   * The handle of a hold whose token came from elsewhere (another process, a
   * stored order), to extend, release, confirm or check it: no call to the
   * daemon, which checks the token on each of those. Give the same target
   * the hold was taken with (for a units hold, `units(pools)` serves extend,
   * release and status; confirm needs the counts). Its `ttlMs` is 0 until
   * `extend`; it is never a session hold. Leaving its scope releases it,
   * like any hold's.
   */
  resume(namespace: string, partition: string, target: Target | readonly string[], token: string, opts: Pick<CallOptions, "correlationId"> = {}): Hold {
    // The token is "<fence>.<random>" (docs/protocol.md): the fence is its head.
    const m = typeof token === "string" ? /^([0-9]{1,20})\./.exec(token) : null;
    if (m === null || BigInt(m[1]) >= 2n ** 64n) {
      throw new HoldfastError(Code.INVALID_ARGUMENT, "not a hold token (<fence>.<random>)", { field: "token" });
    }
    return new Hold(this, namespace, partition, asTarget(target), token, BigInt(m[1]), 0, opts.correlationId ?? newCorrelationId());
  }

  /**
   * Give back what was confirmed under `reference` (the order a refund is
   * for), all or nothing: claimed seats (with a segment: only those legs)
   * or units of pools (NOT_FOUND, naming the pool, when fewer are sold under
   * it). After UNAVAILABLE/DEADLINE_EXCEEDED retry with the same idempotencyKey.
   */
  async cancel(namespace: string, partition: string, target: Target | readonly string[], cancel: CancelOptions, opts: CallOptions = {}): Promise<CancelResult> {
    const t = asTarget(target, cancel.segment);
    if (!cancel.idempotencyKey) {
      throw new HoldfastError(Code.INVALID_ARGUMENT, "idempotencyKey is required", { field: "idempotency_key" });
    }
    const fields = { namespace, partition, ...takeFields(t), idempotencyKey: cancel.idempotencyKey, reference: cancel.reference ?? "" };
    const [r] = await this[CALL]("cancel", fields, opts);
    return cancelResult(r);
  }

  /**
   * Diagnostic state of a target as Redis has it: `resources` for seats (per
   * leg, "<id>@<leg>", with a segment), `pools` for units (`units(names)`
   * will do). Pass `token` to learn what it owns.
   */
  async status(namespace: string, partition: string, target: Target | readonly string[], opts: StatusOptions = {}): Promise<StatusResult> {
    const t = asTarget(target, opts.segment);
    const [r] = await this[CALL]("status", { namespace, partition, ...nameFields(t), token: opts.token ?? "" }, opts);
    return statusResult(r);
  }

  /** Capacity and sold units per pool, and the partition's default, as PostgreSQL has them (a read). */
  async getCapacity(namespace: string, partition: string, pools: readonly string[] = [], opts: CallOptions = {}): Promise<Capacities> {
    if (typeof pools === "string" || !Array.isArray(pools)) throw new TypeError("pools must be an array of pool names");
    const [r] = await this[CALL]("getCapacity", { namespace, partition, pools: [...pools] }, opts);
    return capacities(r);
  }

  async health(opts: CallOptions = {}): Promise<Health> {
    const [r] = await this[CALL]("health", {}, opts);
    return health(r);
  }

  /** The daemon's counters in Prometheus text format. */
  async metrics(opts: CallOptions = {}): Promise<string> {
    const [r] = await this[CALL]("metrics", {}, opts);
    return r.text;
  }

  /** The operator's calls (setCapacity, setDefaultCapacity), on this client's connection. */
  get admin(): Admin {
    return (this.#admin ??= new Admin(this));
  }

  // ---- transport -----------------------------------------------------------

  #nextId(): number {
    // uint64 on the wire; 0 is reserved for "could not decode the request".
    // A number (not a bigint) is the cheaper key for matching answers.
    this.lastId = this.lastId >= Number.MAX_SAFE_INTEGER ? 1 : this.lastId + 1;
    return this.lastId;
  }

  /** @internal The transport every call goes through (a Hold's and the Admin's too). */
  async [CALL]<K extends Method>(
    method: K,
    value: Partial<MethodValue<K>>,
    opts: CallOptions,
    timeout?: number,
    cid?: string,
  ): Promise<[ResultValue<K>, Response, Connection]> {
    if (this.closedFlag) throw new ClientClosedError();
    const timeoutMs = timeout ?? checkTimeout(opts.timeoutMs ?? this.timeoutMs);
    const correlationId = cid ?? opts.correlationId ?? newCorrelationId();
    const deadline = performance.now() + timeoutMs;
    let traceparent = traceparentNow(opts.traceparent);
    if (typeof traceparent !== "string") traceparent = await traceparent; // the first call looks for OpenTelemetry
    const signal = opts.signal;
    try {
      if (signal?.aborted) throw signal.reason;
      for (let attempt = 1; ; attempt++) {
        let conn = this.conn;
        if (conn === null || conn.broken) conn = await this.#connectionWithin(deadline, timeoutMs, signal, attempt > 1);
        const id = this.#nextId();
        const frame = encodeCall(id, correlationId, wireTimeoutMs(deadline - performance.now()), traceparent, method, value);
        let resp: Response;
        try {
          resp = await conn.send(id, frame, deadline, timeoutMs, signal);
        } catch (err) {
          // Resend once on a fresh connection, only when the daemon cannot
          // have seen the request.
          if (!(err instanceof UnsentError) || attempt >= 2) throw err;
          continue;
        }
        return [resultOf(resp, method), resp, conn];
      }
    } catch (err) {
      if (err instanceof HoldfastError && !err.correlationId) err.correlationId = correlationId;
      throw err;
    }
  }

  /**
   * A usable connection, made (or being made) for a call due at `deadline`:
   * rejects when the deadline passes first (UNAVAILABLE while the daemon
   * cannot be reached, DEADLINE_EXCEEDED otherwise) or `signal` aborts.
   */
  async #connectionWithin(deadline: number, timeoutMs: number, signal: AbortSignal | undefined, sentBefore: boolean): Promise<Connection> {
    if (signal?.aborted) throw signal.reason;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stop = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        if (!sentBefore && this.lastConnectError) {
          // Never got a connection: the daemon is down, not slow.
          reject(new HoldfastError(Code.UNAVAILABLE, `cannot connect to holdfastd at ${this.socketPath}: ${this.lastConnectError.message}`));
        } else {
          reject(new HoldfastError(Code.DEADLINE_EXCEEDED, `no answer from holdfastd within ${timeoutMs} ms`));
        }
      }, Math.max(0, deadline - performance.now()));
      if (signal) {
        onAbort = () => reject(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
      }
    });
    try {
      return await Promise.race([this.#connection(deadline), stop]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener("abort", onAbort);
    }
  }

  async #connection(deadline: number): Promise<Connection> {
    if (this.closedFlag) throw new ClientClosedError();
    if (this.conn && !this.conn.broken) return this.conn;
    this.connecting ??= this.#connect(deadline).finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  async #connect(deadline: number): Promise<Connection> {
    // A restarting daemon leaves no socket (ENOENT) or a dead one
    // (ECONNREFUSED) for a moment: keep trying until the call's deadline.
    for (let attempt = 0; ; attempt++) {
      const remaining = deadline - performance.now();
      try {
        const conn = await Connection.open(this.socketPath, Math.max(1, Math.min(this.connectTimeoutMs, remaining)));
        if (this.closedFlag) {
          conn.close();
          throw new ClientClosedError();
        }
        this.conn = conn;
        this.lastConnectError = null;
        return conn;
      } catch (err) {
        if (err instanceof HoldfastError) throw err;
        const e = err as NodeJS.ErrnoException;
        this.lastConnectError = e;
        if (e.code === "EACCES" || e.code === "EPERM") {
          throw new HoldfastError(Code.PERMISSION_DENIED, `cannot connect to holdfastd at ${this.socketPath}: ${e.message}`);
        }
        const left = deadline - performance.now();
        if (left <= 0) {
          throw new HoldfastError(Code.UNAVAILABLE, `cannot connect to holdfastd at ${this.socketPath}: ${e.message}`);
        }
        await sleep(Math.min(reconnectDelayMs(attempt, Math.random()), left));
      }
    }
  }
}

function checkWait(wait: number | undefined): number {
  if (wait === undefined || wait === null) return 0;
  if (typeof wait !== "number" || !Number.isFinite(wait) || wait < 0) {
    throw new RangeError(`wait must be a number of ms >= 0, got ${String(wait)}`);
  }
  return Math.min(MAX_UINT32, Math.ceil(wait));
}

function resultOf<K extends Method>(resp: Response, method: K): ResultValue<K> {
  if (resp.code !== Code.OK) {
    throw new HoldfastError(resp.code, resp.message, {
      field: resp.error?.field,
      resourceId: resp.error?.resourceId,
      correlationId: resp.correlationId,
      result: resp.result.value,
    });
  }
  if (resp.result.case !== method) {
    throw new HoldfastError(Code.INTERNAL, `daemon answered ${method} with result ${resp.result.case ?? "none"}`, {
      correlationId: resp.correlationId,
    });
  }
  return resp.result.value as ResultValue<K>;
}

