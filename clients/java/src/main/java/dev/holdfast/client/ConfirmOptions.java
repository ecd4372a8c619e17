package dev.holdfast.client;

import java.util.Objects;

/**
 * The caller's side of a Confirm.
 *
 * @param idempotencyKey identifies this purchase across retries (1-128 bytes of {@code
 *     [A-Za-z0-9._:-]}); reuse it when retrying an unknown outcome; never the token
 * @param reference stored with the claim (order id, customer id...)
 * @param payload opaque bytes stored with the claim (at most 4 KiB), may be empty
 */
public record ConfirmOptions(String idempotencyKey, String reference, byte[] payload) {
  public ConfirmOptions {
    Objects.requireNonNull(idempotencyKey, "idempotencyKey");
    reference = reference == null ? "" : reference;
    payload = payload == null ? new byte[0] : payload.clone();
  }

  public static ConfirmOptions of(String idempotencyKey, String reference) {
    return new ConfirmOptions(idempotencyKey, reference, null);
  }

  @Override
  public byte[] payload() {
    return payload.clone();
  }
}
