// What a call acts on (surface.json "targets"): seats of one partition,
// optionally on a journey segment, or units of pools. Every operation takes
// one, so there is one method per operation instead of one per kind.

import { create } from "@bufbuild/protobuf";
import { PoolTakeSchema, SegmentSchema } from "./gen/holdfast/v1/holdfast_pb.js";

const MAX_UINT32 = 2 ** 32 - 1;

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

/** Seat ids of one partition (`seats(["E7", "E8"], segment?)`). */
export interface SeatsTarget {
  readonly kind: "seats";
  readonly ids: readonly string[];
  /** Only in namespaces with legs: the legs of each id acted on. */
  readonly segment?: Segment;
}

/**
 * Units of pools of one partition (`units({ adult: 2, child: 1 })`). Made
 * from names only (`units(["adult"])`), `units` is empty and the target
 * serves Status (and Extend or Release of a hold resumed from its token).
 */
export interface UnitsTarget {
  readonly kind: "units";
  /** Units by pool: `{ adult: 2, child: 1 }`. */
  readonly units: UnitCounts;
  /** The pool names, in the order given. */
  readonly pools: readonly string[];
}

export type Target = SeatsTarget | UnitsTarget;

/**
 * Units of pools as callers give them: `{ adult: 2, child: 1 }`, a `Map`, or
 * `[pool, count]` pairs. Pool names are like ids (`[A-Za-z0-9._-]`, 1-128
 * bytes); a count is 1..1,000,000 (the daemon checks both).
 */
export type Units = Readonly<Record<string, number>> | ReadonlyMap<string, number> | Iterable<readonly [string, number]>;

/** Units by pool, as targets and results give them: `{ adult: 2, child: 1 }`. */
export type UnitCounts = Readonly<Record<string, number>>;

// Targets made here are frozen and checked; anything else is rebuilt (a
// target that went through JSON, an object literal) so a call never sends
// what a constructor would have refused.
const MADE = new WeakSet<object>();

function made<T extends Target>(t: T): T {
  MADE.add(Object.freeze(t));
  return t;
}

/** Seats: `seats(["E7", "E8"])`, or legs of them: `seats(["E7"], { fromStop: 0, toStop: 2 })`. */
export function seats(ids: readonly string[], segment?: Segment): SeatsTarget {
  // A bare string would otherwise be spread into single characters.
  if (typeof ids === "string" || !Array.isArray(ids)) throw new TypeError("seats() takes an array of resource ids");
  const s = checkSegment(segment);
  const list = Object.freeze([...ids]);
  return made(s === undefined ? { kind: "seats", ids: list } : { kind: "seats", ids: list, segment: s });
}

/** Units of pools: `units({ adult: 2, child: 1 })`; names only for Status: `units(["adult", "child"])`. */
export function units(given: Units | readonly string[]): UnitsTarget {
  if (given === null || typeof given !== "object") {
    throw new TypeError("units() takes { pool: count }, a Map, [pool, count] pairs or pool names");
  }
  if (Array.isArray(given) && given.every((p) => typeof p === "string")) {
    return made({ kind: "units", units: Object.freeze({}), pools: Object.freeze([...(given as string[])]) });
  }
  const pairs: Iterable<readonly [string, number]> =
    Symbol.iterator in given ? (given as Iterable<readonly [string, number]>) : Object.entries(given as Record<string, number>);
  const counts = new Map<string, number>();
  for (const pair of pairs) {
    if (!Array.isArray(pair) || pair.length !== 2) throw new TypeError("units() takes { pool: count }, a Map or [pool, count] pairs");
    const [pool, count] = pair as [unknown, unknown];
    if (typeof pool !== "string") throw new TypeError(`a pool name must be a string, got ${typeof pool}`);
    if (typeof count !== "number" || !Number.isInteger(count) || count < 0 || count > MAX_UINT32) {
      throw new RangeError(`units of pool '${pool}' must be a whole number >= 0, got ${String(count)}`);
    }
    // A record cannot hold a pool twice; the wire would refuse it anyway.
    if (counts.has(pool)) throw new RangeError(`pool '${pool}' is given twice`);
    counts.set(pool, count);
  }
  return made({ kind: "units", units: Object.freeze(Object.fromEntries(counts)), pools: Object.freeze([...counts.keys()]) });
}

/**
 * The target of a call: a plain array of ids is seats (with the deprecated
 * `segment` option, if any); a target not made by seats()/units() is rebuilt.
 */
export function asTarget(target: Target | readonly string[], segment?: Segment): Target {
  if (Array.isArray(target)) return seats(target as readonly string[], segment);
  if (segment !== undefined && segment !== null) throw new TypeError("give the segment in the target: seats(ids, segment)");
  const t = target as Target;
  if (MADE.has(t)) return t;
  if (t?.kind === "seats") return seats(t.ids, t.segment);
  if (t?.kind === "units") return Object.keys(t.units ?? {}).length > 0 ? units(t.units) : units(t.pools ?? []);
  throw new TypeError("a target is seats([...ids]) or units({ pool: count })");
}

/** True for a units target made from names only (it cannot be held, confirmed or cancelled). */
function namesOnly(t: UnitsTarget): boolean {
  return t.pools.length > Object.keys(t.units).length;
}

/** The request fields of Hold, Confirm and Cancel: ids (and segment) or units. */
export function takeFields(t: Target) {
  if (t.kind === "seats") return { ids: [...t.ids], segment: wireSegment(t.segment) };
  if (namesOnly(t)) throw new TypeError("units(names) serves status only: give counts, units({ pool: count })");
  return { units: t.pools.map((pool) => create(PoolTakeSchema, { pool, count: t.units[pool] })) };
}

/** The request fields of Extend, Release and Status: ids (and segment) or pool names. */
export function nameFields(t: Target) {
  return t.kind === "seats" ? { ids: [...t.ids], segment: wireSegment(t.segment) } : { pools: [...t.pools] };
}

/** The per-leg names the daemon answers with: `["E7@0", "E7@1", ...]`. */
export function legIds(ids: readonly string[], segment: Segment): string[] {
  const s = checkSegment(segment)!;
  return seats(ids).ids.flatMap((id) => Array.from({ length: Math.max(0, s.toStop - s.fromStop) }, (_, k) => `${id}@${s.fromStop + k}`));
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
  return segment === undefined ? undefined : create(SegmentSchema, segment);
}

/** "E7,E8 segment=0->2" or "adult=2,child=1": how a hold shows its target. */
export function describeTarget(t: Target): string {
  if (t.kind === "seats") return `[${t.ids.join(",")}]${t.segment ? ` segment=${t.segment.fromStop}->${t.segment.toStop}` : ""}`;
  return `[${t.pools.map((p) => (p in t.units ? `${p}=${t.units[p]}` : p)).join(",")}]`;
}
