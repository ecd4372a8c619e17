// The operator's calls (surface.json "admin"): capacity now, force-release
// later. A surface of its own because the daemon will refuse them to
// application clients; `client.admin` reaches it.

import { CALL, type Caller } from "./call.js";
import type { CallOptions } from "./options.js";
import { poolCapacity, type PoolCapacity } from "./results.js";

export class Admin {
  #client: Caller;

  /** @internal `client.admin` makes it. */
  constructor(client: Caller) {
    this.#client = client;
  }

  /**
   * Set a pool's capacity (units it may sell in total, sold included) in
   * PostgreSQL. An absolute value: safe to retry. Below what is sold:
   * FAILED_PRECONDITION (`err.field` "capacity").
   */
  async setCapacity(namespace: string, partition: string, pool: string, capacity: number | bigint, opts: CallOptions = {}): Promise<PoolCapacity> {
    if (typeof pool !== "string" || pool === "") throw new TypeError("pool must be a pool name (setDefaultCapacity sets the default)");
    const [r] = await this.#client[CALL]("setCapacity", { namespace, partition, pool, capacity: checkCapacity(capacity) }, opts);
    return poolCapacity(r.pool);
  }

  /**
   * Set the partition's default capacity: the capacity of every pool of the
   * partition that has none of its own (e.g. 1 for one-per-user pools).
   */
  async setDefaultCapacity(namespace: string, partition: string, capacity: number | bigint, opts: CallOptions = {}): Promise<PoolCapacity> {
    const [r] = await this.#client[CALL]("setCapacity", { namespace, partition, partitionDefault: true, capacity: checkCapacity(capacity) }, opts);
    return poolCapacity(r.pool);
  }
}

function checkCapacity(capacity: number | bigint): bigint {
  const ok =
    typeof capacity === "bigint" ? capacity >= 0n && capacity < 2n ** 64n : Number.isSafeInteger(capacity) && capacity >= 0;
  if (!ok) throw new RangeError(`capacity must be a whole number >= 0, got ${String(capacity)}`);
  return BigInt(capacity);
}
