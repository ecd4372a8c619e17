package dev.holdfast.client;

import java.time.Duration;

/**
 * One pool in a Status answer, from the Redis mirror (docs/pools.md). Diagnostic only: it may be
 * stale when it arrives and grants nothing ({@link HoldfastClient#getCapacity} reads PostgreSQL).
 *
 * @param pool the pool
 * @param capacity how many units it may have sold at once
 * @param sold units sold (confirmed)
 * @param held units in live holds
 * @param free capacity - sold - held (0 when that is negative)
 * @param owned units the asking hold's token holds ({@link Hold#status()}); else 0
 * @param ttl remaining TTL of the token's hold; zero when it holds none
 */
public record PoolStatus(
    String pool, long capacity, long sold, long held, long free, int owned, Duration ttl) {
  static PoolStatus fromProto(dev.holdfast.v1.PoolStatus p) {
    return new PoolStatus(
        p.getPool(),
        p.getCapacity(),
        p.getSold(),
        p.getHeld(),
        p.getFree(),
        p.getOwned(),
        Duration.ofMillis(p.getTtlMs()));
  }
}
