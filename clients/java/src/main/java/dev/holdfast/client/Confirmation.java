package dev.holdfast.client;

import java.time.Instant;
import java.util.List;

/**
 * The result of a Confirm.
 *
 * @param fence the hold's fencing number (unsigned; see {@link Long#toUnsignedString(long)})
 * @param claims the claims PostgreSQL recorded, one per resource
 * @param replayed true when this answer repeats an earlier identical confirm with the same key
 */
public record Confirmation(long fence, List<Claim> claims, boolean replayed) {
  public Confirmation {
    claims = List.copyOf(claims);
  }

  /** One confirmed resource as PostgreSQL recorded it. */
  public record Claim(String resourceId, long fence, String reference, Instant confirmedAt) {}
}
