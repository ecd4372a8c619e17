package dev.holdfast.client;

import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import java.util.HashMap;
import java.util.Map;

/**
 * The current OpenTelemetry span's traceparent. Loaded only when {@link TraceParents} found the
 * OpenTelemetry API on the classpath (an optional dependency).
 */
final class OpenTelemetryTraceParent {
  private OpenTelemetryTraceParent() {}

  /**
   * "00-&lt;trace-id&gt;-&lt;span-id&gt;-&lt;flags&gt;" of {@link Context#current()}, or "" without
   * a valid span context. The W3C propagator itself, whatever the application registered
   * globally: holdfastd reads traceparent.
   */
  static String current() {
    Map<String, String> carrier = new HashMap<>(4);
    W3CTraceContextPropagator.getInstance()
        .inject(
            Context.current(),
            carrier,
            (c, key, value) -> {
              if (c != null) {
                c.put(key, value);
              }
            });
    return carrier.getOrDefault("traceparent", "");
  }
}
