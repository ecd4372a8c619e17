package dev.holdfast.client;

import java.util.List;

/**
 * The answer of {@link HoldfastClient#getCapacity}: as PostgreSQL has them.
 *
 * @param pools one per pool asked for
 * @param defaultCapacity the partition's default capacity (0 when none was set)
 */
public record PoolCapacities(List<PoolCapacity> pools, long defaultCapacity) {
  public PoolCapacities {
    pools = List.copyOf(pools);
  }
}
