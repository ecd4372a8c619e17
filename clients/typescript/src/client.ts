// The holdfast client: async/await API over one Unix-socket connection.

import { randomUUID } from "node:crypto";
import { inspect } from "node:util";

import { create } from "@bufbuild/protobuf";
import {
  Code,
  RequestSchema,
  ResourceState,
  type Request,
  type Response,
} from "./gen/holdfast/v1/holdfast_pb.js";
import { ClientClosedError, HoldfastError } from "./errors.js";
import { Connection, UnsentError } from "./connection.js";
import { encodeRequest } from "./frame.js";

// Node 20 ships Symbol.asyncDispose; older runtimes get the well-known
// registry symbol that TypeScript's `await using` helper also looks up.
(Symbol as { asyncDispose?: symbol }).asyncDispose ??= Symbol.for("Symbol.asyncDispose");

export const DEFAULT_SOCKET = "/run/holdfast/holdfast.sock";

export interface ClientOptions {
  /** Default: $HOLDFAST_SOCKET, else /run/holdfast/holdfast.sock. */
  socketPath?: string;
  /** Deadline of a call when it gives none (ms). Default 2000. */
  timeoutMs?: number;
  /** Longest wait for one connect attempt (ms). Default 1000. */
  connectTimeoutMs?: number;
}

export interface CallOptions {
  /** Deadline for this call (ms): sent to the daemon and enforced here. */
  timeoutMs?: number;
  /** Trace id logged by the daemon; a random one is generated when omitted. */
  correlationId?: string;
  /** Stop waiting when aborted (the request may still take effect). */
  signal?: AbortSignal;
}

export interface HoldOptions extends CallOptions {
  /** 0 or omitted: the namespace's default TTL. */
  ttlMs?: number;
}

export interface ConfirmOptions {
  /** The caller's key, kept across retries of the same confirm. Never the token. */
  idempotencyKey: string;
  reference?: string;
  payload?: Uint8Array;
}

export interface CancelOptions {
  idempotencyKey: string;
  reference?: string;
}

export interface Claim {
  resourceId: string;
  fence: bigint;
  reference: string;
  confirmedAtUnixMs: number;
}

export interface ConfirmResult {
  fence: bigint;
  claims: Claim[];
  /** True when this replays the stored result of an identical earlier confirm. */
  replayed: boolean;
}

export interface CancelResult {
  cancelled: number;
  replayed: boolean;
}

/** Diagnostic view of one resource; never permission for anything. */
export interface ResourceStatus {
  id: string;
  state: ResourceState;
  /** Remaining TTL (ms): -1 when the key has no TTL, 0 when free. */
  ttlMs: number;
  owned: boolean;
}

export interface Health {
  live: boolean;
  ready: boolean;
  version: string;
  redis: string;
  postgres: string;
  scriptPath: string;
  releasePath: string;
  library: string;
  connections: number;
  inFlight: number;
  draining: boolean;
}

type Method = NonNullable<Request["method"]["case"]>;
type MethodValue<K extends Method> = Extract<Request["method"], { case: K }>["value"];
type ResultValue<K extends Method> = Extract<Response["result"], { case: K }>["value"];

const MAX_TIMEOUT_MS = 2 ** 32 - 1;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function newCorrelationId(): string {
  return randomUUID().replaceAll("-", "");
}

function checkIds(ids: readonly string[]): string[] {
  // A bare string would otherwise be spread into single characters.
  if (typeof ids === "string" || !Array.isArray(ids)) {
    throw new TypeError("ids must be an array of resource ids");
  }
  return [...ids];
}

/**
 * Talks to holdfastd over its Unix socket. One connection carries many calls
 * in flight; after the daemon restarts the next call reconnects on its own.
 * Failed calls reject with HoldfastError (`err.code`).
 */
export class Client implements AsyncDisposable {
  readonly socketPath: string;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  private conn: Connection | null = null;
  private connecting: Promise<Connection> | null = null;
  private closedFlag = false;
  private lastId = 0n;
  private lastConnectError: Error | null = null;

  constructor(opts: ClientOptions = {}) {
    this.socketPath = opts.socketPath ?? process.env.HOLDFAST_SOCKET ?? DEFAULT_SOCKET;
    this.timeoutMs = checkTimeout(opts.timeoutMs ?? 2000);
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 1000;
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** Close the connection; calls still waiting reject with ClientClosedError. */
  close(): void {
    this.closedFlag = true;
    this.conn?.close();
    this.conn = null;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
  }

  // ---- API ---------------------------------------------------------------

  /** Hold every id in one partition, all or nothing. `await using` releases it. */
  async hold(namespace: string, partition: string, ids: readonly string[], opts: HoldOptions = {}): Promise<Hold> {
    const list = checkIds(ids);
    const correlationId = opts.correlationId ?? newCorrelationId();
    const [r, resp] = await this.call(
      "hold",
      { namespace, partition, ids: list, ttlMs: opts.ttlMs ?? 0 },
      { ...opts, correlationId },
    );
    return new Hold(this, namespace, partition, list, r.token, r.fence, r.ttlMs, correlationId, resp.degraded);
  }

  /** Stretch a hold's TTL (owner-checked); resolves to the TTL applied. */
  async extend(namespace: string, partition: string, ids: readonly string[], token: string, opts: HoldOptions = {}): Promise<number> {
    const [r] = await this.call("extend", { namespace, partition, ids: checkIds(ids), token, ttlMs: opts.ttlMs ?? 0 }, opts);
    return r.ttlMs;
  }

  /** Give a hold back (owner-checked); resolves to how many ids were released. */
  async release(namespace: string, partition: string, ids: readonly string[], token: string, opts: CallOptions = {}): Promise<number> {
    const [r] = await this.call("release", { namespace, partition, ids: checkIds(ids), token }, opts);
    return r.released;
  }

  /**
   * Turn a hold into a durable claim. After UNAVAILABLE/DEADLINE_EXCEEDED retry
   * with the same idempotencyKey: a confirm that committed answers again with
   * its stored result (`replayed: true`).
   */
  async confirm(
    namespace: string,
    partition: string,
    ids: readonly string[],
    token: string,
    confirm: ConfirmOptions,
    opts: CallOptions = {},
  ): Promise<ConfirmResult> {
    if (!confirm.idempotencyKey) {
      throw new HoldfastError(Code.INVALID_ARGUMENT, "idempotencyKey is required", { field: "idempotency_key" });
    }
    const [r] = await this.call(
      "confirm",
      {
        namespace,
        partition,
        ids: checkIds(ids),
        token,
        idempotencyKey: confirm.idempotencyKey,
        reference: confirm.reference ?? "",
        payload: confirm.payload ?? new Uint8Array(0),
      },
      opts,
    );
    return {
      fence: r.fence,
      claims: r.claims.map((c) => ({
        resourceId: c.resourceId,
        fence: c.fence,
        reference: c.reference,
        confirmedAtUnixMs: Number(c.confirmedAtUnixMs),
      })),
      replayed: r.replayed,
    };
  }

  /** Remove confirmed claims so the resources can be sold again. */
  async cancel(namespace: string, partition: string, ids: readonly string[], cancel: CancelOptions, opts: CallOptions = {}): Promise<CancelResult> {
    if (!cancel.idempotencyKey) {
      throw new HoldfastError(Code.INVALID_ARGUMENT, "idempotencyKey is required", { field: "idempotency_key" });
    }
    const [r] = await this.call(
      "cancel",
      { namespace, partition, ids: checkIds(ids), idempotencyKey: cancel.idempotencyKey, reference: cancel.reference ?? "" },
      opts,
    );
    return { cancelled: r.cancelled, replayed: r.replayed };
  }

  /** Diagnostic state of each id; pass `token` to learn which it owns. */
  async status(namespace: string, partition: string, ids: readonly string[], opts: CallOptions & { token?: string } = {}): Promise<ResourceStatus[]> {
    const [r] = await this.call("status", { namespace, partition, ids: checkIds(ids), token: opts.token ?? "" }, opts);
    return r.resources.map((s) => ({ id: s.id, state: s.state, ttlMs: Number(s.ttlMs), owned: s.owned }));
  }

  async health(opts: CallOptions = {}): Promise<Health> {
    const [r] = await this.call("health", {}, opts);
    return {
      live: r.live,
      ready: r.ready,
      version: r.version,
      redis: r.redis,
      postgres: r.postgres,
      scriptPath: r.scriptPath,
      releasePath: r.releasePath,
      library: r.library,
      connections: r.connections,
      inFlight: r.inFlight,
      draining: r.draining,
    };
  }

  /** The daemon's counters in Prometheus text format. */
  async metrics(opts: CallOptions = {}): Promise<string> {
    const [r] = await this.call("metrics", {}, opts);
    return r.text;
  }

  // ---- transport -----------------------------------------------------------

  private nextId(): bigint {
    // uint64 on the wire; 0 is reserved for "could not decode the request".
    this.lastId = this.lastId >= 2n ** 64n - 1n ? 1n : this.lastId + 1n;
    return this.lastId;
  }

  private async call<K extends Method>(
    method: K,
    value: Partial<MethodValue<K>>,
    opts: CallOptions,
  ): Promise<[ResultValue<K>, Response]> {
    if (this.closedFlag) throw new ClientClosedError();
    const timeoutMs = checkTimeout(opts.timeoutMs ?? this.timeoutMs);
    const deadline = performance.now() + timeoutMs;
    const req = create(RequestSchema, {
      correlationId: opts.correlationId ?? newCorrelationId(),
      method: { case: method, value } as Request["method"],
    });
    const inFlight: { conn?: Connection; id?: bigint } = {};
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stop = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        if (inFlight.conn && inFlight.id !== undefined) inFlight.conn.forget(inFlight.id);
        if (!inFlight.conn && this.lastConnectError) {
          // Never got a connection: the daemon is down, not slow.
          reject(new HoldfastError(Code.UNAVAILABLE, `cannot connect to holdfastd at ${this.socketPath}: ${this.lastConnectError.message}`));
        } else {
          reject(new HoldfastError(Code.DEADLINE_EXCEEDED, `no answer from holdfastd within ${timeoutMs} ms`));
        }
      }, timeoutMs);
      if (opts.signal) {
        onAbort = () => {
          if (inFlight.conn && inFlight.id !== undefined) inFlight.conn.forget(inFlight.id);
          reject(opts.signal!.reason);
        };
        if (opts.signal.aborted) onAbort();
        else opts.signal.addEventListener("abort", onAbort, { once: true });
      }
    });
    try {
      const resp: Response = await Promise.race([this.roundtrip(req, deadline, inFlight), stop]);
      const result: ResultValue<K> = resultOf(resp, method);
      return [result, resp];
    } catch (err) {
      if (err instanceof HoldfastError && !err.correlationId) err.correlationId = req.correlationId;
      throw err;
    } finally {
      clearTimeout(timer);
      if (onAbort) opts.signal?.removeEventListener("abort", onAbort);
    }
  }

  private async roundtrip(req: Request, deadline: number, inFlight: { conn?: Connection; id?: bigint }): Promise<Response> {
    for (let attempt = 1; ; attempt++) {
      const conn = await this.connection(deadline);
      req.id = this.nextId();
      req.timeoutMs = Math.max(1, Math.min(MAX_TIMEOUT_MS, Math.ceil(deadline - performance.now())));
      inFlight.conn = conn;
      inFlight.id = req.id;
      try {
        return await conn.send(req.id, encodeRequest(req));
      } catch (err) {
        // Resend once on a fresh connection, only when the daemon cannot
        // have seen the request.
        if (!(err instanceof UnsentError) || attempt >= 2) throw err;
      }
    }
  }

  private async connection(deadline: number): Promise<Connection> {
    if (this.closedFlag) throw new ClientClosedError();
    if (this.conn && !this.conn.broken) return this.conn;
    this.connecting ??= this.connect(deadline).finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async connect(deadline: number): Promise<Connection> {
    // A restarting daemon leaves no socket (ENOENT) or a dead one
    // (ECONNREFUSED) for a moment: keep trying until the call's deadline.
    let delay = 10;
    for (;;) {
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
        await sleep(Math.min(delay, left));
        delay = Math.min(delay * 2, 250);
      }
    }
  }
}

function checkTimeout(ms: number): number {
  if (!(ms > 0) || !Number.isFinite(ms)) throw new RangeError(`timeoutMs must be > 0, got ${ms}`);
  return ms;
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

/**
 * A granted hold. `await using hold = await client.hold(...)` releases it when
 * the scope ends, unless it was released or confirmed before. The token is
 * available as `hold.token` but never shown by inspect/JSON/toString.
 */
export class Hold implements AsyncDisposable {
  readonly ids: readonly string[];
  #token: string;
  #active = true;

  constructor(
    private readonly client: Client,
    readonly namespace: string,
    readonly partition: string,
    ids: readonly string[],
    token: string,
    readonly fence: bigint,
    public ttlMs: number,
    readonly correlationId: string,
    readonly degraded = false,
  ) {
    this.ids = Object.freeze([...ids]);
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

  async extend(ttlMs = 0, opts: CallOptions = {}): Promise<number> {
    this.ttlMs = await this.client.extend(this.namespace, this.partition, this.ids, this.#token, {
      correlationId: this.correlationId,
      ...opts,
      ttlMs,
    });
    return this.ttlMs;
  }

  async release(opts: CallOptions = {}): Promise<number> {
    const n = await this.client.release(this.namespace, this.partition, this.ids, this.#token, {
      correlationId: this.correlationId,
      ...opts,
    });
    this.#active = false;
    return n;
  }

  async confirm(confirm: ConfirmOptions, opts: CallOptions = {}): Promise<ConfirmResult> {
    const r = await this.client.confirm(this.namespace, this.partition, this.ids, this.#token, confirm, {
      correlationId: this.correlationId,
      ...opts,
    });
    this.#active = false; // the daemon released/marked the hold after committing
    return r;
  }

  async status(opts: CallOptions = {}): Promise<ResourceStatus[]> {
    return this.client.status(this.namespace, this.partition, this.ids, {
      correlationId: this.correlationId,
      ...opts,
      token: this.#token,
    });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.#active) return;
    try {
      await this.release();
    } catch (err) {
      // Already expired: nothing left to give back.
      if (err instanceof HoldfastError && err.code === Code.NOT_HELD) {
        this.#active = false;
        return;
      }
      throw err;
    }
  }

  toJSON(): Record<string, unknown> {
    return {
      namespace: this.namespace,
      partition: this.partition,
      ids: this.ids,
      fence: this.fence.toString(),
      ttlMs: this.ttlMs,
      degraded: this.degraded,
      correlationId: this.correlationId,
      active: this.#active,
    };
  }

  toString(): string {
    return `Hold(${this.namespace}/${this.partition} [${this.ids.join(",")}] fence=${this.fence}${this.#active ? "" : " finished"})`;
  }

  [inspect.custom](): string {
    return this.toString();
  }
}
