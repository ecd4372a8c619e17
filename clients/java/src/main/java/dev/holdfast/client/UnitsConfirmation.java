package dev.holdfast.client;

import java.time.Instant;
import java.util.List;

/**
 * The result of a Confirm of a {@link UnitsHold}: the units sold for good in PostgreSQL.
 *
 * @param fence the hold's fencing number (unsigned; see {@link Long#toUnsignedString(long)})
 * @param units the units sold
 * @param confirmedAt when the sale was committed
 * @param replayed true when this answer repeats an earlier identical confirm with the same key
 */
public record UnitsConfirmation(
    long fence, List<Units> units, Instant confirmedAt, boolean replayed) {
  public UnitsConfirmation {
    units = List.copyOf(units);
  }
}
