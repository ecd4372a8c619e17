package dev.holdfast.client;

import java.time.Duration;
import java.util.Objects;

/**
 * Per-call options: the deadline and the correlation id.
 *
 * <p>The deadline is sent to the daemon as the request's {@code timeout_ms} and also enforced
 * locally: the call's future fails with {@link HoldfastException.DeadlineExceeded} when it passes.
 * A {@code null} timeout means the client's default. A {@code null} correlation id means one is
 * generated; pass your trace id to find the daemon's log line for the call.
 */
public record CallOptions(Duration timeout, String correlationId) {
  private static final CallOptions DEFAULTS = new CallOptions(null, null);

  public CallOptions {
    if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
      throw new IllegalArgumentException("timeout must be positive: " + timeout);
    }
  }

  /** The client's default timeout and a generated correlation id. */
  public static CallOptions defaults() {
    return DEFAULTS;
  }

  public static CallOptions timeout(Duration timeout) {
    return new CallOptions(Objects.requireNonNull(timeout), null);
  }

  public CallOptions withTimeout(Duration timeout) {
    return new CallOptions(timeout, correlationId);
  }

  public CallOptions withCorrelationId(String correlationId) {
    return new CallOptions(timeout, correlationId);
  }
}
