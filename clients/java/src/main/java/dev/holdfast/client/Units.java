package dev.holdfast.client;

import dev.holdfast.v1.PoolTake;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * {@code count} units of one pool, in a namespace of kind {@code pools} (docs/pools.md): what a
 * {@link UnitsHold} takes, a Confirm sells and a Cancel gives back. Pool names are like ids
 * ({@code [A-Za-z0-9._-]}, 1-128 bytes); the daemon checks them and the count (1..1,000,000).
 *
 * @param pool the pool, e.g. {@code "adult"}
 * @param count how many units
 */
public record Units(String pool, int count) {
  public Units {
    Objects.requireNonNull(pool, "pool");
  }

  public static Units of(String pool, int count) {
    return new Units(pool, count);
  }

  PoolTake toProto() {
    return PoolTake.newBuilder().setPool(pool).setCount(count).build();
  }

  static Units fromProto(PoolTake t) {
    return new Units(t.getPool(), t.getCount());
  }

  static List<PoolTake> toProto(List<Units> units) {
    List<PoolTake> out = new ArrayList<>(units.size());
    for (Units u : units) {
      out.add(u.toProto());
    }
    return out;
  }

  static List<Units> fromProto(List<PoolTake> units) {
    return units.stream().map(Units::fromProto).toList();
  }

  /** The pools of {@code units}, in order. */
  static List<String> pools(List<Units> units) {
    return units.stream().map(Units::pool).toList();
  }
}
