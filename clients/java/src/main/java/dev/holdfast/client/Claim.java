package dev.holdfast.client;

import java.time.Instant;

/**
 * One confirmed resource as PostgreSQL recorded it, in a {@link ConfirmResult}.
 *
 * @param resourceId the id, or {@code "<id>@<leg>"} on a journey segment
 * @param fence the fence of the hold that claimed it
 * @param reference the confirm's reference
 * @param confirmedAt when it was committed
 */
@SuppressWarnings("deprecation") // implements the old Confirmation.Claim for one release
public record Claim(String resourceId, long fence, String reference, Instant confirmedAt)
    implements Confirmation.Claim {
  static Claim fromProto(dev.holdfast.v1.Claim c) {
    return new Claim(
        c.getResourceId(),
        c.getFence(),
        c.getReference(),
        Instant.ofEpochMilli(c.getConfirmedAtUnixMs()));
  }
}
