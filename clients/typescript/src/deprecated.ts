// The names of the surface before surface.json (a method per kind, a hold
// class per kind, capacity calls on the client), kept for one release. Each
// forwards to its replacement, as protos/contract/surface/typescript.json
// ("deprecated") lists them and surface.test.ts checks; delete this file
// (and its import in index.ts) when they go.

import { Client } from "./client.js";
import { Hold, withHold } from "./hold.js";
import type { CallOptions, CancelOptions, ConfirmOptions, HoldOptions, StatusOptions } from "./options.js";
import type { CancelResult, ConfirmResult, PoolCapacity, PoolStatus } from "./results.js";
import { seats, units, type Segment, type UnitCounts, type Units } from "./target.js";

// Declared on the classes themselves, so old call sites keep compiling and
// editors strike them through.
declare module "./client.js" {
  interface Client {
    /** @deprecated use `client.hold(ns, partition, units({ ... }), opts)` */
    holdUnits(namespace: string, partition: string, units: Units, opts?: HoldOptions): Promise<Hold>;
    /** @deprecated use `client.resume(ns, partition, seats(ids, segment), token).extend(ttlMs)` */
    extend(namespace: string, partition: string, ids: readonly string[], token: string, opts?: CallOptions & { ttlMs?: number; segment?: Segment }): Promise<number>;
    /** @deprecated use `client.resume(ns, partition, units(pools), token).extend(ttlMs)` */
    extendUnits(namespace: string, partition: string, pools: readonly string[], token: string, opts?: CallOptions & { ttlMs?: number }): Promise<number>;
    /** @deprecated use `client.resume(ns, partition, seats(ids, segment), token).release()` */
    release(namespace: string, partition: string, ids: readonly string[], token: string, opts?: CallOptions & { segment?: Segment }): Promise<number>;
    /** @deprecated use `client.resume(ns, partition, units(pools), token).release()` */
    releaseUnits(namespace: string, partition: string, pools: readonly string[], token: string, opts?: CallOptions): Promise<number>;
    /** @deprecated use `client.resume(ns, partition, seats(ids, segment), token).confirm({ ... })` */
    confirm(
      namespace: string,
      partition: string,
      ids: readonly string[],
      token: string,
      confirm: ConfirmOptions & { segment?: Segment },
      opts?: CallOptions,
    ): Promise<ConfirmResult>;
    /** @deprecated use `client.resume(ns, partition, units({ ... }), token).confirm({ ... })` */
    confirmUnits(namespace: string, partition: string, units: Units, token: string, confirm: ConfirmOptions, opts?: CallOptions): Promise<ConfirmResult>;
    /** @deprecated use `client.cancel(ns, partition, units({ ... }), { ... })` */
    cancelUnits(namespace: string, partition: string, units: Units, cancel: CancelOptions, opts?: CallOptions): Promise<CancelResult>;
    /** @deprecated use `(await client.status(ns, partition, units(pools), opts)).pools` */
    poolStatus(namespace: string, partition: string, pools: readonly string[], opts?: StatusOptions): Promise<PoolStatus[]>;
    /** @deprecated use `client.admin.setCapacity(...)` */
    setCapacity(namespace: string, partition: string, pool: string, capacity: number | bigint, opts?: CallOptions): Promise<PoolCapacity>;
    /** @deprecated use `client.admin.setDefaultCapacity(...)` */
    setDefaultCapacity(namespace: string, partition: string, capacity: number | bigint, opts?: CallOptions): Promise<PoolCapacity>;
  }
}

declare module "./hold.js" {
  interface Hold {
    /** @deprecated use `hold.target` (seats: `target.ids`); `[]` for units */
    readonly ids: readonly string[];
    /** @deprecated use `hold.target` (seats: `target.segment`) */
    readonly segment: Segment | undefined;
    /** @deprecated use `hold.target` (units: `target.units`); `{}` for seats */
    readonly units: UnitCounts;
    /** @deprecated use `hold.target` (units: `target.pools`); `[]` for seats */
    readonly pools: readonly string[];
  }
}

const C = Client.prototype;

// Async, as the old methods were: a bad argument rejects rather than throws.

C.holdUnits = async function (namespace, partition, given, opts = {}) {
  return this.hold(namespace, partition, units(given), opts);
};
C.extend = async function (namespace, partition, ids, token, opts = {}) {
  const { ttlMs = 0, segment, ...call } = opts;
  return this.resume(namespace, partition, seats(ids, segment), token, call).extend(ttlMs, call);
};
C.extendUnits = async function (namespace, partition, pools, token, opts = {}) {
  const { ttlMs = 0, ...call } = opts;
  return this.resume(namespace, partition, units(pools), token, call).extend(ttlMs, call);
};
C.release = async function (namespace, partition, ids, token, opts = {}) {
  const { segment, ...call } = opts;
  return this.resume(namespace, partition, seats(ids, segment), token, call).release(call);
};
C.releaseUnits = async function (namespace, partition, pools, token, opts = {}) {
  return this.resume(namespace, partition, units(pools), token, opts).release(opts);
};
C.confirm = async function (namespace, partition, ids, token, confirm, opts = {}) {
  const { segment, ...rest } = confirm;
  return this.resume(namespace, partition, seats(ids, segment), token, opts).confirm(rest, opts);
};
C.confirmUnits = async function (namespace, partition, given, token, confirm, opts = {}) {
  return this.resume(namespace, partition, units(given), token, opts).confirm(confirm, opts);
};
C.cancelUnits = async function (namespace, partition, given, cancel, opts = {}) {
  return this.cancel(namespace, partition, units(given), cancel, opts);
};
C.poolStatus = async function (namespace, partition, pools, opts = {}) {
  return (await this.status(namespace, partition, units(pools), opts)).pools;
};
C.setCapacity = async function (namespace, partition, pool, capacity, opts = {}) {
  return this.admin.setCapacity(namespace, partition, pool, capacity, opts);
};
C.setDefaultCapacity = async function (namespace, partition, capacity, opts = {}) {
  return this.admin.setDefaultCapacity(namespace, partition, capacity, opts);
};

const getters: Record<"ids" | "segment" | "units" | "pools", (h: Hold) => unknown> = {
  ids: (h) => (h.target.kind === "seats" ? h.target.ids : Object.freeze([])),
  segment: (h) => (h.target.kind === "seats" ? h.target.segment : undefined),
  units: (h) => (h.target.kind === "units" ? h.target.units : Object.freeze({})),
  pools: (h) => (h.target.kind === "units" ? h.target.pools : Object.freeze([])),
};
for (const [name, get] of Object.entries(getters)) {
  Object.defineProperty(Hold.prototype, name, {
    get(this: Hold) {
      return get(this);
    },
    configurable: true,
  });
}

/** @deprecated use `Hold`: one hold class for seats and units */
export const PoolHold = Hold;
/** @deprecated use `Hold`: one hold class for seats and units */
export type PoolHold = Hold;
/** @deprecated use `Hold`: one hold class for seats and units */
export const HoldBase = Hold;
/** @deprecated use `Hold`: one hold class for seats and units */
export type HoldBase = Hold;

/** @deprecated use `withHold(client, ns, partition, units({ ... }), opts, fn)` */
export function withHoldUnits<T>(
  client: Client,
  namespace: string,
  partition: string,
  given: Units,
  opts: HoldOptions,
  fn: (hold: Hold) => Promise<T>,
): Promise<T> {
  return withHold(client, namespace, partition, units(given), opts, fn);
}

/** @deprecated use `ConfirmResult` */
export type PoolConfirmResult = ConfirmResult;
/** @deprecated use `CancelResult` */
export type PoolCancelResult = CancelResult;
/** @deprecated use `HoldOptions` */
export type PoolHoldOptions = HoldOptions;
/** @deprecated use `HoldOptions` */
export type HoldOptionsBase = HoldOptions;
/** @deprecated use `ConfirmOptions` */
export type PoolConfirmOptions = ConfirmOptions;
/** @deprecated use `CancelOptions` */
export type PoolCancelOptions = CancelOptions;
/** @deprecated give the segment in the target: `seats(ids, segment)` */
export type SegmentOptions = { segment?: Segment };
