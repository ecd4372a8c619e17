package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.holdfast.v1.Code;
import dev.holdfast.v1.HealthResponse;
import dev.holdfast.v1.HoldResponse;
import dev.holdfast.v1.ReleaseResponse;
import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * The client without the optional OpenTelemetry API: run by the surefire execution
 * "no-opentelemetry", which leaves io.opentelemetry off the test classpath. Everything works as
 * before, and only an explicit traceparent is sent.
 */
class WithoutOpenTelemetryTest {
  @Test
  void theClientWorksAndSendsOnlyAnExplicitTraceParent() throws Exception {
    assertThrows(
        ClassNotFoundException.class, () -> Class.forName("io.opentelemetry.context.Context"));
    assertFalse(TraceParents.openTelemetryPresent());
    String tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    List<Request> seen = new CopyOnWriteArrayList<>();
    try (ScriptedPeer peer =
            new ScriptedPeer(
                (p, c, req) -> {
                  seen.add(req);
                  Response.Builder r =
                      Response.newBuilder().setId(req.getId()).setCode(Code.CODE_OK);
                  if (req.hasHold()) {
                    r.setHold(HoldResponse.newBuilder().setToken("1.x").setFence(1));
                  } else if (req.hasRelease()) {
                    r.setRelease(ReleaseResponse.newBuilder().setReleased(1));
                  } else {
                    r.setHealth(HealthResponse.newBuilder().setLive(true));
                  }
                  p.send(c, r.build());
                });
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      try (Hold h =
          client.hold("seat", "p", Target.seats("E7")).ttl(Duration.ofMinutes(1)).acquire()) {
        assertEquals(1, h.fence());
      }
      client.health(CallOptions.defaults().withTraceParent(tp));
      client.health();
    }
    assertEquals(
        List.of("", "", tp, ""), seen.stream().map(Request::getTraceparent).toList());
  }
}
