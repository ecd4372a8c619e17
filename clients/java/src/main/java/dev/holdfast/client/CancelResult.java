package dev.holdfast.client;

import dev.holdfast.v1.CancelResponse;
import java.util.List;

/**
 * The answer of a Cancel ({@link HoldfastClient#cancel}).
 *
 * @param cancelled seats: how many claims were removed; pools: how many units were given back
 * @param replayed true when this answer repeats an earlier identical cancel with the same key
 * @param units pools: the units given back, per pool; empty for seats
 */
@SuppressWarnings("deprecation") // implements the old UnitsCancelResult for one release
public record CancelResult(int cancelled, boolean replayed, List<Units> units)
    implements UnitsCancelResult {
  public CancelResult {
    units = List.copyOf(units);
  }

  static CancelResult fromProto(CancelResponse c) {
    return new CancelResult(c.getCancelled(), c.getReplayed(), Units.fromProto(c.getUnitsList()));
  }
}
