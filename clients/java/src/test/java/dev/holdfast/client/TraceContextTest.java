package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.holdfast.v1.Code;
import dev.holdfast.v1.ExtendResponse;
import dev.holdfast.v1.HealthResponse;
import dev.holdfast.v1.HoldResponse;
import dev.holdfast.v1.ReleaseResponse;
import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Trace context (contract.json "trace_context"), with the OpenTelemetry API on the classpath: the
 * call's own traceparent, else the current span's, else none. {@link WithoutOpenTelemetryTest}
 * runs without the API.
 */
class TraceContextTest {
  private static final String TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  /** A stand-in daemon that answers every request OK and keeps it. */
  private static ScriptedPeer recorder(List<Request> seen) throws Exception {
    return new ScriptedPeer(
        (p, c, req) -> {
          seen.add(req);
          Response.Builder r =
              Response.newBuilder()
                  .setId(req.getId())
                  .setCorrelationId(req.getCorrelationId())
                  .setCode(Code.CODE_OK);
          if (req.hasHold()) {
            r.setHold(HoldResponse.newBuilder().setToken("1.fake").setFence(1).setTtlMs(60000));
          } else if (req.hasExtend()) {
            r.setExtend(ExtendResponse.newBuilder().setTtlMs(1000));
          } else if (req.hasRelease()) {
            r.setRelease(ReleaseResponse.newBuilder().setReleased(1));
          } else {
            r.setHealth(HealthResponse.newBuilder().setLive(true));
          }
          p.send(c, r.build());
        });
  }

  private static Span span(String traceId, String spanId, boolean sampled) {
    return Span.wrap(
        SpanContext.create(
            traceId,
            spanId,
            sampled ? TraceFlags.getSampled() : TraceFlags.getDefault(),
            TraceState.getDefault()));
  }

  @Test
  void theApiIsDetected() {
    assertTrue(TraceParents.openTelemetryPresent());
    assertEquals("", TraceParents.forCall(null), "no span: none");
  }

  @Test
  void contractCases() throws Exception {
    JsonObject tc =
        JsonParser.parseString(
                Files.readString(
                    RepoRoot.get().resolve("protos/contract/contract.json"),
                    StandardCharsets.UTF_8))
            .getAsJsonObject()
            .getAsJsonObject("trace_context");
    assertEquals("traceparent", tc.get("field").getAsString());
    assertFalse(tc.get("opentelemetry_required").getAsBoolean());
    List<Request> seen = new CopyOnWriteArrayList<>();
    try (ScriptedPeer peer = recorder(seen);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      int i = 0;
      for (JsonElement e : tc.getAsJsonArray("cases")) {
        JsonObject c = e.getAsJsonObject();
        String explicit = c.get("explicit").isJsonNull() ? null : c.get("explicit").getAsString();
        Span s = Span.getInvalid();
        if (!c.get("otel").isJsonNull()) {
          JsonObject o = c.getAsJsonObject("otel");
          s =
              span(
                  o.get("trace_id").getAsString(),
                  o.get("span_id").getAsString(),
                  o.get("sampled").getAsBoolean());
        }
        try (Scope ignored = s.makeCurrent()) {
          client.health(CallOptions.defaults().withTraceParent(explicit));
        }
        assertEquals(
            c.get("traceparent").getAsString(), seen.get(i).getTraceparent(), "case " + i);
        i++;
      }
    }
  }

  @Test
  void everyCallThroughAHoldTakesTheContextOfThatCall() throws Exception {
    String trace = "0af7651916cd43dd8448eb211c80319c";
    List<Request> seen = new CopyOnWriteArrayList<>();
    try (ScriptedPeer peer = recorder(seen);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      Hold h;
      try (Scope ignored = span(trace, "00000000000000a1", true).makeCurrent()) {
        h = client.hold("seat", "p", Target.seats("E7")).ttl(Duration.ofMinutes(1)).acquire();
      }
      try (Scope ignored = span(trace, "00000000000000b2", true).makeCurrent()) {
        h.extend(Duration.ofSeconds(1));
        h.extend(Duration.ofSeconds(1), CallOptions.defaults().withTraceParent(TP));
      }
      try (Scope ignored = span(trace, "00000000000000c3", false).makeCurrent()) {
        h.close(); // the scope's release
      }
      // Outside any span: none.
      try (Scope ignored = Context.root().makeCurrent()) {
        client.health();
      }
    }
    assertEquals(
        List.of(
            "00-" + trace + "-00000000000000a1-01",
            "00-" + trace + "-00000000000000b2-01",
            TP,
            "00-" + trace + "-00000000000000c3-00",
            ""),
        seen.stream().map(Request::getTraceparent).toList());
  }

  @Test
  void callOptionsKeepTheTraceParent() {
    CallOptions o = CallOptions.defaults().withTraceParent(TP);
    assertEquals(TP, o.withTimeout(Duration.ofSeconds(1)).withCorrelationId("c").traceParent());
    assertEquals(null, new CallOptions(Duration.ofSeconds(1), "c").traceParent());
  }
}
