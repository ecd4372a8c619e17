package dev.holdfast.client;

/**
 * A pool as PostgreSQL has it (SetCapacity, GetCapacity; docs/pools.md).
 *
 * @param pool the pool; empty for the partition's default
 * @param capacity the capacity in effect (its own, or the partition's default)
 * @param sold units sold
 * @param partitionDefault true when the pool has no capacity of its own and follows the
 *     partition's default
 */
public record PoolCapacity(String pool, long capacity, long sold, boolean partitionDefault) {
  static PoolCapacity fromProto(dev.holdfast.v1.PoolCapacity p) {
    return new PoolCapacity(p.getPool(), p.getCapacity(), p.getSold(), p.getPartitionDefault());
  }
}
