// The holdfast client: async/await API over one Unix-socket connection.

import { randomUUID } from "node:crypto";
import { inspect } from "node:util";

import { create } from "@bufbuild/protobuf";
import {
  Code,
  RequestSchema,
  ResourceState,
  SegmentSchema,
  type Request,
  type Response,
} from "./gen/holdfast/v1/holdfast_pb.js";
import { ClientClosedError, HoldfastError } from "./errors.js";
import { Connection, UnsentError } from "./connection.js";
import { encodeRequest } from "./frame.js";
import { traceparentFor } from "./trace.js";

const MAX_TIMEOUT_MS = 2 ** 32 - 1;
const MAX_UINT32 = 2 ** 32 - 1;

// Node 20 ships Symbol.asyncDispose; older runtimes get the well-known
// registry symbol that TypeScript's `await using` helper also looks up.
(Symbol as { asyncDispose?: symbol }).asyncDispose ??= Symbol.for("Symbol.asyncDispose");

// The client contract (protos/contract/client-contract.md, contract.json).
export const DEFAULT_SOCKET = "/run/holdfast/holdfast.sock";
/** The environment variable naming the daemon's socket. */
export const SOCKET_ENV = "HOLDFAST_SOCKET";
/** Deadline of a call that gives none (ms). */
export const DEFAULT_TIMEOUT_MS = 5000;

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

/**
 * A trip along a line of stops (journey segments, docs/segments.md): legs
 * `fromStop` .. `toStop - 1`, leg k running from stop k to stop k + 1. In a
 * namespace with `max_legs > 0` every request names one, and answers name
 * each leg `"<id>@<leg>"` ("E7@1"); other namespaces refuse one.
 */
export interface Segment {
  fromStop: number;
  toStop: number;
}

/** The journey segment of a request; omitted: none (as before segments existed). */
export interface SegmentOptions {
  segment?: Segment;
}

export interface HoldOptions extends CallOptions, SegmentOptions {
  /** 0 or omitted: the namespace's default TTL. */
  ttlMs?: number;
}

export interface ConfirmOptions extends SegmentOptions {
  /** The caller's key, kept across retries of the same confirm. Never the token. */
  idempotencyKey: string;
  reference?: string;
  payload?: Uint8Array;
}

export interface CancelOptions extends SegmentOptions {
  idempotencyKey: string;
  reference?: string;
}

/** The per-leg names the daemon answers with: `["E7@0", "E7@1", ...]`. */
export function legIds(ids: readonly string[], segment: Segment): string[] {
  const s = checkSegment(segment)!;
  return checkIds(ids).flatMap((id) => Array.from({ length: Math.max(0, s.toStop - s.fromStop) }, (_, k) => `${id}@${s.fromStop + k}`));
}

function checkSegment(segment: Segment | undefined): Segment | undefined {
  if (segment === undefined || segment === null) return undefined;
  if (typeof segment !== "object") throw new TypeError("segment must be { fromStop, toStop }");
  for (const k of ["fromStop", "toStop"] as const) {
    const v = segment[k];
    if (!Number.isInteger(v) || v < 0 || v > MAX_UINT32) {
      throw new RangeError(`segment.${k} must be a stop number >= 0, got ${String(v)}`);
    }
  }
  return Object.freeze({ fromStop: segment.fromStop, toStop: segment.toStop });
}

/** The request field: unset without a segment. */
function wireSegment(segment: Segment | undefined) {
  const s = checkSegment(segment);
  return s === undefined ? undefined : create(SegmentSchema, s);
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
    this.socketPath = opts.socketPath || process.env[SOCKET_ENV] || DEFAULT_SOCKET;
    this.timeoutMs = checkTimeout(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
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

  /**
   * Hold every id in one partition, all or nothing. `await using` releases it.
   * `segment: { fromStop, toStop }` holds legs fromStop .. toStop - 1 of each
   * id, in a namespace with max_legs (and only there); the Hold keeps it for
   * its extend, release, confirm, status and close.
   */
  async hold(namespace: string, partition: string, ids: readonly string[], opts: HoldOptions = {}): Promise<Hold> {
    const list = checkIds(ids);
    const segment = checkSegment(opts.segment);
    const correlationId = opts.correlationId ?? newCorrelationId();
    const [r, resp] = await this.call(
      "hold",
      { namespace, partition, ids: list, ttlMs: opts.ttlMs ?? 0, segment: wireSegment(segment) },
      { ...opts, correlationId },
    );
    return new Hold(this, namespace, partition, list, r.token, r.fence, r.ttlMs, correlationId, resp.degraded, segment);
  }

  /** Stretch a hold's TTL (owner-checked); resolves to the TTL applied. */
  async extend(namespace: string, partition: string, ids: readonly string[], token: string, opts: HoldOptions = {}): Promise<number> {
    const [r] = await this.call(
      "extend",
      { namespace, partition, ids: checkIds(ids), token, ttlMs: opts.ttlMs ?? 0, segment: wireSegment(opts.segment) },
      opts,
    );
    return r.ttlMs;
  }

  /** Give a hold back (owner-checked); resolves to how many ids were released. */
  async release(
    namespace: string,
    partition: string,
    ids: readonly string[],
    token: string,
    opts: CallOptions & SegmentOptions = {},
  ): Promise<number> {
    const [r] = await this.call("release", { namespace, partition, ids: checkIds(ids), token, segment: wireSegment(opts.segment) }, opts);
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
        segment: wireSegment(confirm.segment),
      },
      opts,
    );
    return withJSON({
      fence: r.fence,
      claims: r.claims.map((c) =>
        withJSON({
          resourceId: c.resourceId,
          fence: c.fence,
          reference: c.reference,
          confirmedAtUnixMs: Number(c.confirmedAtUnixMs),
        }),
      ),
      replayed: r.replayed,
    });
  }

  /** Remove confirmed claims so the resources can be sold again (with `segment`: only those legs). */
  async cancel(namespace: string, partition: string, ids: readonly string[], cancel: CancelOptions, opts: CallOptions = {}): Promise<CancelResult> {
    if (!cancel.idempotencyKey) {
      throw new HoldfastError(Code.INVALID_ARGUMENT, "idempotencyKey is required", { field: "idempotency_key" });
    }
    const [r] = await this.call(
      "cancel",
      {
        namespace,
        partition,
        ids: checkIds(ids),
        idempotencyKey: cancel.idempotencyKey,
        reference: cancel.reference ?? "",
        segment: wireSegment(cancel.segment),
      },
      opts,
    );
    return { cancelled: r.cancelled, replayed: r.replayed };
  }

  /**
   * Diagnostic state of each id (with `segment`: of each leg, "<id>@<leg>");
   * pass `token` to learn which it owns.
   */
  async status(
    namespace: string,
    partition: string,
    ids: readonly string[],
    opts: CallOptions & SegmentOptions & { token?: string } = {},
  ): Promise<ResourceStatus[]> {
    const [r] = await this.call(
      "status",
      { namespace, partition, ids: checkIds(ids), token: opts.token ?? "", segment: wireSegment(opts.segment) },
      opts,
    );
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
      traceparent: await traceparentFor(opts.traceparent),
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
      req.timeoutMs = wireTimeoutMs(deadline - performance.now());
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

/**
 * A JSON.stringify replacer that writes bigints (64-bit fields: fences, ids)
 * as decimal strings, as proto3's JSON mapping does:
 * `JSON.stringify(value, jsonReplacer)`. Results of this client do that on
 * their own (toJSON); this is for anything else, e.g. raw `pb` messages.
 */
export function jsonReplacer(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}

/** Gives a result object a non-enumerable toJSON that renders its bigints as strings. */
function withJSON<T extends object>(obj: T): T {
  Object.defineProperty(obj, "toJSON", {
    value(this: T) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(this)) out[k] = typeof v === "bigint" ? v.toString() : v;
      return out;
    },
    enumerable: false,
  });
  return obj;
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

// Release answers that mean "this token holds none of the ids any more".
const SCOPE_EXIT_QUIET: ReadonlySet<Code> = new Set([Code.NOT_HELD, Code.HELD_BY_ANOTHER, Code.CONFIRMED]);

/**
 * Takes a hold, runs `fn` with it and leaves the hold's scope afterwards
 * (`hold.close()`): released unless `fn` confirmed or released it. Works on
 * Node 20 and any TypeScript target, without `await using`. When `fn` throws,
 * that error is what rejects, even if the release failed too.
 *
 *     const booked = await withHold(client, "seat", run, ["E7"], { ttlMs: 60_000 }, async (hold) => {
 *       await pay();
 *       return hold.confirm({ idempotencyKey: `${orderId}:confirm` });
 *     });
 */
export async function withHold<T>(
  client: Client,
  namespace: string,
  partition: string,
  ids: readonly string[],
  opts: HoldOptions,
  fn: (hold: Hold) => Promise<T>,
): Promise<T> {
  const hold = await client.hold(namespace, partition, ids, opts);
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

/**
 * A granted hold. `await using hold = await client.hold(...)` (or `withHold`,
 * or `hold.close()` in a `finally`) releases it when the scope ends, unless it
 * was released or confirmed before. The token is available as `hold.token` but
 * never shown by inspect/JSON/toString. A hold taken with a `segment` keeps it:
 * its extend, release, confirm, status and close act on the same legs.
 */
export class Hold implements AsyncDisposable {
  readonly ids: readonly string[];
  /** The journey segment the hold covers; undefined outside namespaces with legs. */
  readonly segment: Segment | undefined;
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
    segment?: Segment,
  ) {
    this.ids = Object.freeze([...ids]);
    this.segment = checkSegment(segment);
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
      segment: this.segment,
    });
    return this.ttlMs;
  }

  async release(opts: CallOptions = {}): Promise<number> {
    const n = await this.client.release(this.namespace, this.partition, this.ids, this.#token, {
      correlationId: this.correlationId,
      ...opts,
      segment: this.segment,
    });
    this.#active = false;
    return n;
  }

  /** Confirms the hold's ids (and legs: its own segment, whatever `confirm.segment` says). */
  async confirm(confirm: ConfirmOptions, opts: CallOptions = {}): Promise<ConfirmResult> {
    const r = await this.client.confirm(
      this.namespace,
      this.partition,
      this.ids,
      this.#token,
      { ...confirm, segment: this.segment },
      { correlationId: this.correlationId, ...opts },
    );
    this.#active = false; // the daemon released/marked the hold after committing
    return r;
  }

  async status(opts: CallOptions = {}): Promise<ResourceStatus[]> {
    return this.client.status(this.namespace, this.partition, this.ids, {
      correlationId: this.correlationId,
      ...opts,
      token: this.#token,
      segment: this.segment,
    });
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
        this.#active = false;
        return;
      }
      throw err;
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  toJSON(): Record<string, unknown> {
    return {
      namespace: this.namespace,
      partition: this.partition,
      ids: this.ids,
      ...(this.segment ? { segment: this.segment } : {}),
      fence: this.fence.toString(),
      ttlMs: this.ttlMs,
      degraded: this.degraded,
      correlationId: this.correlationId,
      active: this.#active,
    };
  }

  toString(): string {
    const seg = this.segment ? ` segment=${this.segment.fromStop}->${this.segment.toStop}` : "";
    return `Hold(${this.namespace}/${this.partition} [${this.ids.join(",")}]${seg} fence=${this.fence}${this.#active ? "" : " finished"})`;
  }

  [inspect.custom](): string {
    return this.toString();
  }
}
