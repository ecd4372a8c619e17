package dev.holdfast.client;

import java.time.Instant;
import java.util.List;

/**
 * The old name of a seat Confirm's answer, kept for one release so that {@code Confirmation c =
 * hold.confirm(...)} still compiles: {@link ConfirmResult} implements it.
 *
 * @deprecated use {@link ConfirmResult} (and {@link dev.holdfast.client.Claim}); removed in the
 *     next release
 */
@Deprecated
public interface Confirmation {
  long fence();

  List<? extends Claim> claims();

  boolean replayed();

  /**
   * The old name of a claim.
   *
   * @deprecated use {@link dev.holdfast.client.Claim}; removed in the next release
   */
  @Deprecated
  interface Claim {
    String resourceId();

    long fence();

    String reference();

    Instant confirmedAt();
  }
}
