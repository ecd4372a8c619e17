// What calls resolve to (surface.json "types"): one result type per
// operation for every kind of target, mapped from the wire's answers.

import type {
  CancelResponse,
  ConfirmResponse,
  GetCapacityResponse,
  HealthResponse,
  PoolCapacity as PbPoolCapacity,
  ResourceState,
  StatusResponse,
} from "./gen/holdfast/v1/holdfast_pb.js";
import type { UnitCounts } from "./target.js";

/** One claimed seat (or leg) of a confirm. */
export interface Claim {
  resourceId: string;
  fence: bigint;
  reference: string;
  confirmedAtUnixMs: number;
}

export interface ConfirmResult {
  fence: bigint;
  /** True when this replays the stored result of an identical earlier confirm. */
  replayed: boolean;
  /** Seats: one claim per id (per leg with a segment); pools: none. */
  claims: Claim[];
  /** Pools: the units sold; seats: none (`{}`). */
  units: UnitCounts;
  /** When the sale was committed (ms since the epoch). */
  confirmedAtUnixMs: number;
}

export interface CancelResult {
  /** Ids (legs) cancelled; pools: units given back. */
  cancelled: number;
  replayed: boolean;
  /** Pools: the units given back; seats: none (`{}`). */
  units: UnitCounts;
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

/** The answer of a Status, as the wire's: `resources` for seats, `pools` for units. */
export interface StatusResult {
  resources: ResourceStatus[];
  pools: PoolStatus[];
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

/** `{ pool: count }` from wire units: a plain object, frozen. */
function unitCounts(units: readonly { pool: string; count: number }[]): UnitCounts {
  return Object.freeze(Object.fromEntries(units.map((u) => [u.pool, u.count])));
}

export function confirmResult(r: ConfirmResponse): ConfirmResult {
  const claims = r.claims.map((c) =>
    withJSON({ resourceId: c.resourceId, fence: c.fence, reference: c.reference, confirmedAtUnixMs: Number(c.confirmedAtUnixMs) }),
  );
  // The wire sets confirmed_at for pools only; a seat confirm's claims all
  // carry the one commit's time.
  const confirmedAtUnixMs = Number(r.confirmedAtUnixMs) || (claims[0]?.confirmedAtUnixMs ?? 0);
  return withJSON({ fence: r.fence, replayed: r.replayed, claims, units: unitCounts(r.units), confirmedAtUnixMs });
}

export function cancelResult(r: CancelResponse): CancelResult {
  return { cancelled: r.cancelled, replayed: r.replayed, units: unitCounts(r.units) };
}

export function statusResult(r: StatusResponse): StatusResult {
  return {
    resources: r.resources.map((s) => ({ id: s.id, state: s.state, ttlMs: Number(s.ttlMs), owned: s.owned })),
    pools: r.pools.map((p) => ({
      pool: p.pool,
      capacity: Number(p.capacity),
      sold: Number(p.sold),
      held: Number(p.held),
      free: Number(p.free),
      owned: p.owned,
      ttlMs: Number(p.ttlMs),
    })),
  };
}

export function poolCapacity(p: PbPoolCapacity | undefined): PoolCapacity {
  return {
    pool: p?.pool ?? "",
    capacity: Number(p?.capacity ?? 0n),
    sold: Number(p?.sold ?? 0n),
    partitionDefault: p?.partitionDefault ?? false,
  };
}

export function capacities(r: GetCapacityResponse): Capacities {
  return { pools: r.pools.map(poolCapacity), defaultCapacity: Number(r.defaultCapacity) };
}

export function health(r: HealthResponse): Health {
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
