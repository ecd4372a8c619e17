package dev.holdfast.client;

import java.time.Duration;
import java.util.Objects;

/**
 * Per-call options: the deadline, the correlation id and the W3C traceparent.
 *
 * <p>The deadline is sent to the daemon as the request's {@code timeout_ms} and also enforced
 * locally: the call's future fails with {@link HoldfastException.DeadlineExceeded} when it passes.
 * A {@code null} timeout means the client's default. A {@code null} correlation id means one is
 * generated; pass your trace id to find the daemon's log line for the call.
 *
 * <p>A {@code null} traceparent means the current OpenTelemetry span's when the OpenTelemetry API
 * is on the classpath (else none); a given one is sent as it is ("00-&lt;32 hex trace-id&gt;-&lt;16
 * hex parent-id&gt;-&lt;2 hex flags&gt;"; the daemon ignores an invalid one), and {@code ""} sends
 * none for this call.
 */
public record CallOptions(Duration timeout, String correlationId, String traceParent) {
  private static final CallOptions DEFAULTS = new CallOptions(null, null, null);

  public CallOptions {
    if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
      throw new IllegalArgumentException("timeout must be positive: " + timeout);
    }
  }

  /** Timeout and correlation id; the traceparent from OpenTelemetry, if present. */
  public CallOptions(Duration timeout, String correlationId) {
    this(timeout, correlationId, null);
  }

  /** The client's default timeout and a generated correlation id. */
  public static CallOptions defaults() {
    return DEFAULTS;
  }

  public static CallOptions timeout(Duration timeout) {
    return new CallOptions(Objects.requireNonNull(timeout), null, null);
  }

  public CallOptions withTimeout(Duration timeout) {
    return new CallOptions(timeout, correlationId, traceParent);
  }

  public CallOptions withCorrelationId(String correlationId) {
    return new CallOptions(timeout, correlationId, traceParent);
  }

  /** This call's W3C traceparent, instead of OpenTelemetry's; {@code ""}: none. */
  public CallOptions withTraceParent(String traceParent) {
    return new CallOptions(timeout, correlationId, traceParent);
  }
}
