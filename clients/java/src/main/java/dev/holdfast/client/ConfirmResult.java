package dev.holdfast.client;

import dev.holdfast.v1.ConfirmResponse;
import java.time.Instant;
import java.util.List;

/**
 * The answer of a Confirm ({@link Hold#confirm}): sold for good in PostgreSQL.
 *
 * @param fence the hold's fencing number (unsigned; see {@link Long#toUnsignedString(long)})
 * @param replayed true when this answer repeats an earlier identical confirm with the same key
 * @param claims seats: one claim per resource (per leg on a segment); empty for units
 * @param units pools: the units sold; empty for seats
 * @param confirmedAt when the sale was committed
 */
// Implements the old result types for one release. Their nested Confirmation.Claim would shadow
// the package's Claim in here, hence dev.holdfast.client.Claim spelled out.
@SuppressWarnings("deprecation")
public record ConfirmResult(
    long fence,
    boolean replayed,
    List<dev.holdfast.client.Claim> claims,
    List<Units> units,
    Instant confirmedAt)
    implements Confirmation, UnitsConfirmation {
  public ConfirmResult {
    claims = List.copyOf(claims);
    units = List.copyOf(units);
  }

  static ConfirmResult fromProto(ConfirmResponse c) {
    List<dev.holdfast.client.Claim> claims =
        c.getClaimsList().stream().map(dev.holdfast.client.Claim::fromProto).toList();
    // Seat confirms carry the commit time per claim (one transaction), pools on the answer.
    long at = c.getConfirmedAtUnixMs();
    for (dev.holdfast.v1.Claim cl : c.getClaimsList()) {
      at = Math.max(at, cl.getConfirmedAtUnixMs());
    }
    return new ConfirmResult(
        c.getFence(),
        c.getReplayed(),
        claims,
        Units.fromProto(c.getUnitsList()),
        Instant.ofEpochMilli(at));
  }
}
