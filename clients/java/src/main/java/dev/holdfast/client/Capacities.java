package dev.holdfast.client;

import dev.holdfast.v1.GetCapacityResponse;
import java.util.List;

/**
 * The answer of {@link HoldfastClient#getCapacity}: as PostgreSQL has them.
 *
 * @param pools one per pool asked for
 * @param defaultCapacity the partition's default capacity (0 when none was set)
 */
@SuppressWarnings("deprecation") // implements the old PoolCapacities for one release
public record Capacities(List<PoolCapacity> pools, long defaultCapacity) implements PoolCapacities {
  public Capacities {
    pools = List.copyOf(pools);
  }

  static Capacities fromProto(GetCapacityResponse g) {
    return new Capacities(
        g.getPoolsList().stream().map(PoolCapacity::fromProto).toList(), g.getDefaultCapacity());
  }
}
