// The holdfast client: async/await API over one Unix-socket connection.

import { randomFillSync } from "node:crypto";
import { inspect } from "node:util";

import { create } from "@bufbuild/protobuf";
import {
  Code,
  PoolTakeSchema,
  ResourceState,
  SegmentSchema,
  type PoolCapacity as PbPoolCapacity,
  type PoolTake,
  type Request,
  type Response,
} from "./gen/holdfast/v1/holdfast_pb.js";
import { ClientClosedError, HoldfastError } from "./errors.js";
import { Connection, UnsentError } from "./connection.js";
import { SESSION_LOST, type SessionHolds, type SessionMember } from "./session.js";
import { encodeCall } from "./frame.js";
import { traceparentNow } from "./trace.js";

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

/** Called once when a session hold is lost; `hold.lost` is `err` by then. */
export type OnLost<H> = (hold: H, err: HoldfastError) => void | Promise<void>;

/** Options of a hold of either kind (seats or pool units). */
export interface HoldOptionsBase extends CallOptions {
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
}

export interface HoldOptions extends HoldOptionsBase, SegmentOptions {
  /**
   * Bind the hold to this client's connection (docs/sessions.md): the
   * daemon renews it while the connection lives and releases it at once
   * when the connection closes (the client is closed, the process exits or
   * is killed). `ttlMs` must then be 0 or omitted. When the daemon reports
   * it lost, or the connection ends, `hold.lost` becomes the error that says
   * why and `onLost` runs once.
   */
  session?: boolean;
  /**
   * With `session`: called once when the hold is lost (from the client's
   * socket reader, or from `client.close()`: keep it short). An exception it
   * throws is reported with `process.emitWarning`.
   */
  onLost?: OnLost<Hold>;
}

/** Options of a pool hold (`client.holdUnits`). */
export type PoolHoldOptions = HoldOptionsBase;

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

/** Confirm of a pool hold: exactly the units it holds. */
export type PoolConfirmOptions = Omit<ConfirmOptions, "segment">;

/** Cancel of pool units sold under `reference` (the order it refunds). */
export type PoolCancelOptions = Omit<CancelOptions, "segment">;

/**
 * Units of pools, all of one partition: `{ adult: 2, child: 1 }`, a
 * `Map`, or `[pool, count]` pairs. Pool names are like ids
 * (`[A-Za-z0-9._-]`, 1-128 bytes); a count is 1..1,000,000.
 */
export type Units = Readonly<Record<string, number>> | ReadonlyMap<string, number> | Iterable<readonly [string, number]>;

/** Units by pool, as results give them: `{ adult: 2, child: 1 }`. */
export type UnitCounts = Readonly<Record<string, number>>;

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

/** A pool as Redis sees it now (a diagnostic, never permission). */
export interface PoolStatus {
  pool: string;
  /** Mirrored from PostgreSQL. */
  capacity: number;
  sold: number;
  /** Units in live holds. */
  held: number;
  /** capacity - sold - held (0 when that is negative). */
  free: number;
  /** Units the given token holds in this pool. */
  owned: number;
  /** Remaining TTL of the token's hold (ms; 0 when it holds none). */
  ttlMs: number;
}

/** A pool as PostgreSQL has it. */
export interface PoolCapacity {
  /** "" for the partition's default. */
  pool: string;
  /** The capacity in effect: its own, or the partition's default. */
  capacity: number;
  sold: number;
  /** True when the pool has no capacity of its own and follows the partition's default. */
  partitionDefault: boolean;
}

export interface Capacities {
  pools: PoolCapacity[];
  /** The partition's default capacity (0 when none was set). */
  defaultCapacity: number;
}

export interface PoolConfirmResult {
  fence: bigint;
  /** The units sold. */
  units: UnitCounts;
  confirmedAtUnixMs: number;
  /** True when this replays the stored result of an identical earlier confirm. */
  replayed: boolean;
}

export interface PoolCancelResult {
  /** Units given back. */
  cancelled: number;
  replayed: boolean;
  units: UnitCounts;
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

function checkIds(ids: readonly string[]): string[] {
  // A bare string would otherwise be spread into single characters.
  if (typeof ids === "string" || !Array.isArray(ids)) {
    throw new TypeError("ids must be an array of resource ids");
  }
  return [...ids];
}

function checkPools(pools: readonly string[]): string[] {
  if (typeof pools === "string" || !Array.isArray(pools)) {
    throw new TypeError("pools must be an array of pool names");
  }
  return [...pools];
}

/** Units as the wire has them, in the order given. */
function checkUnits(units: Units): PoolTake[] {
  if (units === null || typeof units !== "object" || typeof units === "string") {
    throw new TypeError("units must be { pool: count }, a Map or [pool, count] pairs");
  }
  const pairs: Iterable<readonly [string, number]> =
    Symbol.iterator in units ? (units as Iterable<readonly [string, number]>) : Object.entries(units as Record<string, number>);
  const out: PoolTake[] = [];
  for (const pair of pairs) {
    if (!Array.isArray(pair) || pair.length !== 2) throw new TypeError("units must be { pool: count }, a Map or [pool, count] pairs");
    const [pool, count] = pair as [unknown, unknown];
    if (typeof pool !== "string") throw new TypeError(`a pool name must be a string, got ${typeof pool}`);
    if (typeof count !== "number" || !Number.isInteger(count) || count < 0 || count > MAX_UINT32) {
      throw new RangeError(`units of pool '${pool}' must be a whole number >= 0, got ${String(count)}`);
    }
    out.push(create(PoolTakeSchema, { pool, count }));
  }
  return out;
}

/** `{ pool: count }` from wire units: a plain object, frozen. */
function unitCounts(units: readonly { pool: string; count: number }[]): UnitCounts {
  return Object.freeze(Object.fromEntries(units.map((u) => [u.pool, u.count])));
}

function checkWait(wait: number | undefined): number {
  if (wait === undefined || wait === null) return 0;
  if (typeof wait !== "number" || !Number.isFinite(wait) || wait < 0) {
    throw new RangeError(`wait must be a number of ms >= 0, got ${String(wait)}`);
  }
  return Math.min(MAX_UINT32, Math.ceil(wait));
}

/** The deadline of a hold (ms): long enough for its wait. */
function holdTimeoutMs(opts: HoldOptionsBase, defaultTimeoutMs: number, wait: number): number {
  const timeoutMs = checkTimeout(opts.timeoutMs ?? defaultTimeoutMs);
  return wait > 0 ? Math.max(timeoutMs, wait + WAIT_MARGIN_MS) : timeoutMs;
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
  private lastId = 0;
  private lastConnectError: Error | null = null;

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
   * The daemon releases the connection's session holds, and each is reported
   * lost (`hold.lost`, code UNAVAILABLE; its `onLost` runs from here).
   */
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
   * its extend, release, confirm, status and close. `session: true` binds the
   * hold to this client's connection (see HoldOptions.session); `wait` waits
   * in line for up to that many ms while another token holds an id.
   */
  async hold(namespace: string, partition: string, ids: readonly string[], opts: HoldOptions = {}): Promise<Hold> {
    const list = checkIds(ids);
    const segment = checkSegment(opts.segment);
    const session = opts.session === true;
    if (session && opts.ttlMs) {
      // The daemon refuses it too: a session hold's TTL is the namespace's
      // session_ttl_ms, renewed while the connection lives.
      throw new HoldfastError(Code.INVALID_ARGUMENT, "a session hold takes no ttlMs", { field: "ttl_ms" });
    }
    if (opts.onLost !== undefined && typeof opts.onLost !== "function") throw new TypeError("onLost must be a function");
    const wait = checkWait(opts.wait);
    const correlationId = opts.correlationId ?? newCorrelationId();
    const [r, resp, conn] = await this.call(
      "hold",
      { namespace, partition, ids: list, ttlMs: opts.ttlMs ?? 0, segment: wireSegment(segment), session, waitMs: wait },
      opts,
      holdTimeoutMs(opts, this.timeoutMs, wait),
      correlationId,
    );
    const h = new Hold(this, namespace, partition, list, r.token, r.fence, r.ttlMs, correlationId, resp.degraded, segment);
    // A degraded answer held nothing, so there is nothing to keep.
    if (session && !resp.degraded) h[BIND_SESSION](conn.sessions, opts.onLost as OnLost<HoldBase> | undefined);
    return h;
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

  // ---- pools (docs/pools.md) -----------------------------------------------

  /**
   * Take units of one or more pools of a partition (a namespace of kind
   * "pools"), all or nothing: `client.holdUnits("ga", show, { adult: 2,
   * child: 1 })`. `await using` releases them. Refused with HELD_BY_ANOTHER
   * when a pool has fewer units free than asked (holds expire: try later, or
   * `wait`), CONFIRMED when it has fewer left unsold; `err.resourceId` names
   * the pool.
   */
  async holdUnits(namespace: string, partition: string, units: Units, opts: PoolHoldOptions = {}): Promise<PoolHold> {
    const takes = checkUnits(units);
    const wait = checkWait(opts.wait);
    if ((opts as HoldOptions).session) {
      throw new HoldfastError(Code.INVALID_ARGUMENT, "pool holds cannot be session holds", { field: "session" });
    }
    const correlationId = opts.correlationId ?? newCorrelationId();
    const [r, resp] = await this.call(
      "hold",
      { namespace, partition, units: takes, ttlMs: opts.ttlMs ?? 0, waitMs: wait },
      opts,
      holdTimeoutMs(opts, this.timeoutMs, wait),
      correlationId,
    );
    return new PoolHold(this, namespace, partition, unitCounts(takes), r.token, r.fence, r.ttlMs, correlationId, resp.degraded);
  }

  /** Stretch a pool hold's TTL (owner-checked, all pools or none); resolves to the TTL applied. */
  async extendUnits(
    namespace: string,
    partition: string,
    pools: readonly string[],
    token: string,
    opts: CallOptions & { ttlMs?: number } = {},
  ): Promise<number> {
    const [r] = await this.call("extend", { namespace, partition, pools: checkPools(pools), token, ttlMs: opts.ttlMs ?? 0 }, opts);
    return r.ttlMs;
  }

  /** Give a pool hold's units back (owner-checked); resolves to how many units were released. */
  async releaseUnits(namespace: string, partition: string, pools: readonly string[], token: string, opts: CallOptions = {}): Promise<number> {
    const [r] = await this.call("release", { namespace, partition, pools: checkPools(pools), token }, opts);
    return r.released;
  }

  /**
   * Sell exactly the units `token` holds, in PostgreSQL. After
   * UNAVAILABLE/DEADLINE_EXCEEDED retry with the same idempotencyKey: a
   * confirm that committed answers again (`replayed: true`).
   */
  async confirmUnits(
    namespace: string,
    partition: string,
    units: Units,
    token: string,
    confirm: PoolConfirmOptions,
    opts: CallOptions = {},
  ): Promise<PoolConfirmResult> {
    if (!confirm.idempotencyKey) {
      throw new HoldfastError(Code.INVALID_ARGUMENT, "idempotencyKey is required", { field: "idempotency_key" });
    }
    const [r] = await this.call(
      "confirm",
      {
        namespace,
        partition,
        units: checkUnits(units),
        token,
        idempotencyKey: confirm.idempotencyKey,
        reference: confirm.reference ?? "",
        payload: confirm.payload ?? new Uint8Array(0),
      },
      opts,
    );
    return withJSON({
      fence: r.fence,
      units: unitCounts(r.units),
      confirmedAtUnixMs: Number(r.confirmedAtUnixMs),
      replayed: r.replayed,
    });
  }

  /**
   * Give back units sold under `reference` (the order a refund is for), all
   * pools or none; NOT_FOUND (naming the pool) when fewer are sold under it.
   */
  async cancelUnits(namespace: string, partition: string, units: Units, cancel: PoolCancelOptions, opts: CallOptions = {}): Promise<PoolCancelResult> {
    if (!cancel.idempotencyKey) {
      throw new HoldfastError(Code.INVALID_ARGUMENT, "idempotencyKey is required", { field: "idempotency_key" });
    }
    const [r] = await this.call(
      "cancel",
      { namespace, partition, units: checkUnits(units), idempotencyKey: cancel.idempotencyKey, reference: cancel.reference ?? "" },
      opts,
    );
    return { cancelled: r.cancelled, replayed: r.replayed, units: unitCounts(r.units) };
  }

  /** Each pool as Redis mirrors it (a diagnostic); pass `token` to learn its units. */
  async poolStatus(namespace: string, partition: string, pools: readonly string[], opts: CallOptions & { token?: string } = {}): Promise<PoolStatus[]> {
    const [r] = await this.call("status", { namespace, partition, pools: checkPools(pools), token: opts.token ?? "" }, opts);
    return r.pools.map((p) => ({
      pool: p.pool,
      capacity: Number(p.capacity),
      sold: Number(p.sold),
      held: Number(p.held),
      free: Number(p.free),
      owned: p.owned,
      ttlMs: Number(p.ttlMs),
    }));
  }

  /**
   * Set a pool's capacity (units it may sell in total, sold included) in
   * PostgreSQL. An absolute value: safe to retry. Below what is sold:
   * FAILED_PRECONDITION (`err.field` "capacity").
   */
  async setCapacity(namespace: string, partition: string, pool: string, capacity: number | bigint, opts: CallOptions = {}): Promise<PoolCapacity> {
    if (typeof pool !== "string" || pool === "") throw new TypeError("pool must be a pool name (setDefaultCapacity sets the default)");
    const [r] = await this.call("setCapacity", { namespace, partition, pool, capacity: checkCapacity(capacity) }, opts);
    return poolCapacity(r.pool);
  }

  /**
   * Set the partition's default capacity: the capacity of every pool of the
   * partition that has none of its own (e.g. 1 for one-per-user pools).
   */
  async setDefaultCapacity(namespace: string, partition: string, capacity: number | bigint, opts: CallOptions = {}): Promise<PoolCapacity> {
    const [r] = await this.call("setCapacity", { namespace, partition, partitionDefault: true, capacity: checkCapacity(capacity) }, opts);
    return poolCapacity(r.pool);
  }

  /** Capacity and sold units per pool, and the partition's default, as PostgreSQL has them. */
  async getCapacity(namespace: string, partition: string, pools: readonly string[] = [], opts: CallOptions = {}): Promise<Capacities> {
    const [r] = await this.call("getCapacity", { namespace, partition, pools: checkPools(pools) }, opts);
    return { pools: r.pools.map(poolCapacity), defaultCapacity: Number(r.defaultCapacity) };
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

  private nextId(): number {
    // uint64 on the wire; 0 is reserved for "could not decode the request".
    // A number (not a bigint) is the cheaper key for matching answers.
    this.lastId = this.lastId >= Number.MAX_SAFE_INTEGER ? 1 : this.lastId + 1;
    return this.lastId;
  }

  private async call<K extends Method>(
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
        if (conn === null || conn.broken) conn = await this.connectionWithin(deadline, timeoutMs, signal, attempt > 1);
        const id = this.nextId();
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
  private async connectionWithin(deadline: number, timeoutMs: number, signal: AbortSignal | undefined, sentBefore: boolean): Promise<Connection> {
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
      return await Promise.race([this.connection(deadline), stop]);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener("abort", onAbort);
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

function checkCapacity(capacity: number | bigint): bigint {
  const ok =
    typeof capacity === "bigint" ? capacity >= 0n && capacity < 2n ** 64n : Number.isSafeInteger(capacity) && capacity >= 0;
  if (!ok) throw new RangeError(`capacity must be a whole number >= 0, got ${String(capacity)}`);
  return BigInt(capacity);
}

function poolCapacity(p: PbPoolCapacity | undefined): PoolCapacity {
  return {
    pool: p?.pool ?? "",
    capacity: Number(p?.capacity ?? 0n),
    sold: Number(p?.sold ?? 0n),
    partitionDefault: p?.partitionDefault ?? false,
  };
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
 * `withHold` for pool units: takes them, runs `fn` and leaves the scope
 * afterwards (released unless `fn` confirmed or released them).
 */
export async function withHoldUnits<T>(
  client: Client,
  namespace: string,
  partition: string,
  units: Units,
  opts: PoolHoldOptions,
  fn: (hold: PoolHold) => Promise<T>,
): Promise<T> {
  const hold = await client.holdUnits(namespace, partition, units, opts);
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

const BIND_SESSION = Symbol("holdfast.bindSession");

/**
 * What every hold has: its token (never shown), whether it is still ours to
 * release, and, for a session hold, whether it was lost. Leaving its scope
 * (`await using`, `withHold`, `close()`) releases it unless it was released
 * or confirmed through it.
 */
export abstract class HoldBase implements AsyncDisposable, SessionMember {
  #token: string;
  #active = true;
  #session: SessionHolds | null = null;
  #onLost: OnLost<HoldBase> | undefined;
  #lost: HoldfastError | undefined;

  constructor(
    protected readonly client: Client,
    readonly namespace: string,
    readonly partition: string,
    token: string,
    readonly fence: bigint,
    public ttlMs: number,
    readonly correlationId: string,
    readonly degraded = false,
  ) {
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

  /** @internal */
  [BIND_SESSION](sessions: SessionHolds, onLost: OnLost<HoldBase> | undefined): void {
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

  /** The hold is done (released, confirmed): not ours to release, nor to report. */
  protected finish(): void {
    this.#active = false;
    this.#session?.forget(this);
  }

  /** Releases the hold through the client; resolves to what was released. */
  abstract release(opts?: CallOptions): Promise<number>;

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
        this.finish();
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

  protected stateJSON(): Record<string, unknown> {
    return {
      fence: this.fence.toString(),
      ttlMs: this.ttlMs,
      degraded: this.degraded,
      correlationId: this.correlationId,
      active: this.#active,
      ...(this.session ? { session: true, lost: this.#lost ? this.#lost.codeName : null } : {}),
    };
  }

  protected stateString(): string {
    const session = this.session ? ` session${this.#lost ? ` lost=${this.#lost.codeName}` : ""}` : "";
    return `fence=${this.fence}${session}${this.#active ? "" : " finished"}`;
  }

  abstract toString(): string;

  [inspect.custom](): string {
    return this.toString();
  }
}

/**
 * A granted hold. `await using hold = await client.hold(...)` (or `withHold`,
 * or `hold.close()` in a `finally`) releases it when the scope ends, unless it
 * was released or confirmed before. The token is available as `hold.token` but
 * never shown by inspect/JSON/toString. A hold taken with a `segment` keeps it:
 * its extend, release, confirm, status and close act on the same legs. A
 * session hold (`session: true`) also has `lost`.
 */
export class Hold extends HoldBase {
  readonly ids: readonly string[];
  /** The journey segment the hold covers; undefined outside namespaces with legs. */
  readonly segment: Segment | undefined;

  constructor(
    client: Client,
    namespace: string,
    partition: string,
    ids: readonly string[],
    token: string,
    fence: bigint,
    ttlMs: number,
    correlationId: string,
    degraded = false,
    segment?: Segment,
  ) {
    super(client, namespace, partition, token, fence, ttlMs, correlationId, degraded);
    this.ids = Object.freeze([...ids]);
    this.segment = checkSegment(segment);
  }

  async extend(ttlMs = 0, opts: CallOptions = {}): Promise<number> {
    this.ttlMs = await this.client.extend(this.namespace, this.partition, this.ids, this.token, {
      correlationId: this.correlationId,
      ...opts,
      ttlMs,
      segment: this.segment,
    });
    return this.ttlMs;
  }

  async release(opts: CallOptions = {}): Promise<number> {
    const n = await this.client.release(this.namespace, this.partition, this.ids, this.token, {
      correlationId: this.correlationId,
      ...opts,
      segment: this.segment,
    });
    this.finish();
    return n;
  }

  /** Confirms the hold's ids (and legs: its own segment, whatever `confirm.segment` says). */
  async confirm(confirm: ConfirmOptions, opts: CallOptions = {}): Promise<ConfirmResult> {
    const r = await this.client.confirm(
      this.namespace,
      this.partition,
      this.ids,
      this.token,
      { ...confirm, segment: this.segment },
      { correlationId: this.correlationId, ...opts },
    );
    this.finish(); // the daemon released/marked the hold after committing
    return r;
  }

  async status(opts: CallOptions = {}): Promise<ResourceStatus[]> {
    return this.client.status(this.namespace, this.partition, this.ids, {
      correlationId: this.correlationId,
      ...opts,
      token: this.token,
      segment: this.segment,
    });
  }

  toJSON(): Record<string, unknown> {
    return {
      namespace: this.namespace,
      partition: this.partition,
      ids: this.ids,
      ...(this.segment ? { segment: this.segment } : {}),
      ...this.stateJSON(),
    };
  }

  toString(): string {
    const seg = this.segment ? ` segment=${this.segment.fromStop}->${this.segment.toStop}` : "";
    return `Hold(${this.namespace}/${this.partition} [${this.ids.join(",")}]${seg} ${this.stateString()})`;
  }
}

/**
 * Units of pools held (`client.holdUnits`), all or nothing. Like a Hold:
 * `await using` (or `withHoldUnits`, or `close()` in a `finally`) releases
 * the units unless they were confirmed or released through it; the token is
 * never shown.
 */
export class PoolHold extends HoldBase {
  /** The units held, by pool: `{ adult: 2, child: 1 }`. */
  readonly units: UnitCounts;
  /** The pools of the hold (the keys of `units`). */
  readonly pools: readonly string[];

  constructor(
    client: Client,
    namespace: string,
    partition: string,
    units: UnitCounts,
    token: string,
    fence: bigint,
    ttlMs: number,
    correlationId: string,
    degraded = false,
  ) {
    super(client, namespace, partition, token, fence, ttlMs, correlationId, degraded);
    this.units = Object.isFrozen(units) ? units : Object.freeze({ ...units });
    this.pools = Object.freeze(Object.keys(this.units));
  }

  /** Stretch the hold's TTL (all pools); resolves to the TTL applied. */
  async extend(ttlMs = 0, opts: CallOptions = {}): Promise<number> {
    this.ttlMs = await this.client.extendUnits(this.namespace, this.partition, this.pools, this.token, {
      correlationId: this.correlationId,
      ...opts,
      ttlMs,
    });
    return this.ttlMs;
  }

  /** Give the units back; resolves to how many units were released. */
  async release(opts: CallOptions = {}): Promise<number> {
    const n = await this.client.releaseUnits(this.namespace, this.partition, this.pools, this.token, {
      correlationId: this.correlationId,
      ...opts,
    });
    this.finish();
    return n;
  }

  /** Sell exactly the units held, with the caller's idempotency key (kept across retries). */
  async confirm(confirm: PoolConfirmOptions, opts: CallOptions = {}): Promise<PoolConfirmResult> {
    const r = await this.client.confirmUnits(this.namespace, this.partition, this.units, this.token, confirm, {
      correlationId: this.correlationId,
      ...opts,
    });
    this.finish(); // the units left the holds and count as sold
    return r;
  }

  /** The hold's pools as Redis mirrors them, with its own units (`owned`) and TTL. */
  async status(opts: CallOptions = {}): Promise<PoolStatus[]> {
    return this.client.poolStatus(this.namespace, this.partition, this.pools, {
      correlationId: this.correlationId,
      ...opts,
      token: this.token,
    });
  }

  toJSON(): Record<string, unknown> {
    return { namespace: this.namespace, partition: this.partition, units: this.units, ...this.stateJSON() };
  }

  toString(): string {
    const units = Object.entries(this.units)
      .map(([p, n]) => `${p}=${n}`)
      .join(",");
    return `PoolHold(${this.namespace}/${this.partition} [${units}] ${this.stateString()})`;
  }
}
