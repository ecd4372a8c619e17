package dev.holdfast.client;

/**
 * W3C trace context for requests (the client contract's "Trace context"): a call's own
 * traceparent ({@link CallOptions#withTraceParent}), else the current OpenTelemetry span's when the
 * OpenTelemetry API ({@code io.opentelemetry:opentelemetry-api}) is on the classpath, else none.
 * The API is an optional dependency: without it no OpenTelemetry class is ever loaded.
 */
final class TraceParents {
  /** Whether the OpenTelemetry API can be used; decided once. */
  private static final boolean OPENTELEMETRY = detect();

  private TraceParents() {}

  private static boolean detect() {
    ClassLoader loader = TraceParents.class.getClassLoader();
    try {
      Class.forName("io.opentelemetry.context.Context", false, loader);
      Class.forName(
          "io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator", false, loader);
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  static boolean openTelemetryPresent() {
    return OPENTELEMETRY;
  }

  /** The request's traceparent: {@code explicit} when given (even ""), else OpenTelemetry's. */
  static String forCall(String explicit) {
    if (explicit != null) {
      return explicit;
    }
    if (!OPENTELEMETRY) {
      return "";
    }
    try {
      return OpenTelemetryTraceParent.current();
    } catch (RuntimeException | LinkageError e) {
      return ""; // a tracing problem never fails a call
    }
  }
}
