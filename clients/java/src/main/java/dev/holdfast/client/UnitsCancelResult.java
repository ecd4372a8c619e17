package dev.holdfast.client;

import java.util.List;

/**
 * The result of {@link HoldfastClient#cancelUnits}.
 *
 * @param cancelled how many units were given back, over all pools
 * @param replayed true when this answer repeats an earlier identical cancel with the same key
 * @param units the units given back, per pool
 */
public record UnitsCancelResult(int cancelled, boolean replayed, List<Units> units) {
  public UnitsCancelResult {
    units = List.copyOf(units);
  }
}
