package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.holdfast.v1.Code;
import dev.holdfast.v1.ErrorDetail;
import dev.holdfast.v1.HealthResponse;
import dev.holdfast.v1.HoldResponse;
import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Transport mechanics against a {@link ScriptedPeer}. */
class TransportTest {

  private static Response okHealth(Request req) {
    return Response.newBuilder()
        .setId(req.getId())
        .setCorrelationId(req.getCorrelationId())
        .setCode(Code.CODE_OK)
        .setHealth(HealthResponse.newBuilder().setLive(true).setVersion(req.getCorrelationId()))
        .build();
  }

  private static HoldfastException failure(CompletableFuture<?> f) {
    CompletionException e = assertThrows(CompletionException.class, f::join);
    return assertInstanceOf(HoldfastException.class, e.getCause());
  }

  @Test
  void responsesOutOfOrderReachTheirCallers() throws Exception {
    int n = 8;
    List<Request> held = new ArrayList<>();
    try (ScriptedPeer peer =
            new ScriptedPeer(
                (p, c, req) -> {
                  synchronized (held) {
                    held.add(req);
                    if (held.size() == n) { // answer all, newest first
                      for (int i = n - 1; i >= 0; i--) {
                        p.send(c, okHealth(held.get(i)));
                      }
                    }
                  }
                });
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      List<CompletableFuture<Health>> futures = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        futures.add(client.healthAsync(new CallOptions(Duration.ofSeconds(5), "caller-" + i)));
      }
      for (int i = 0; i < n; i++) {
        assertEquals("caller-" + i, futures.get(i).get(5, TimeUnit.SECONDS).version());
      }
    }
  }

  @Test
  void deadlineIsSentAndEnforcedLocally() throws Exception {
    BlockingQueue<Integer> sentTimeout = new ArrayBlockingQueue<>(4);
    AtomicInteger calls = new AtomicInteger();
    try (ScriptedPeer peer =
            new ScriptedPeer(
                (p, c, req) -> {
                  if (calls.incrementAndGet() == 1) { // answer the first one too late
                    sentTimeout.add(req.getTimeoutMs());
                    CompletableFuture.delayedExecutor(300, TimeUnit.MILLISECONDS)
                        .execute(() -> p.send(c, okHealth(req)));
                    return;
                  }
                  p.send(c, okHealth(req));
                });
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      HoldfastException e =
          failure(client.healthAsync(CallOptions.timeout(Duration.ofMillis(150))));
      assertInstanceOf(HoldfastException.DeadlineExceeded.class, e);
      assertEquals(Code.CODE_DEADLINE_EXCEEDED, e.getCode());
      assertTrue(e.isRetryable());
      int ms = sentTimeout.take();
      assertTrue(ms > 0 && ms <= 150, "timeout_ms sent = " + ms);

      Thread.sleep(350); // the late answer arrives and must be dropped
      Health h = client.healthAsync(CallOptions.defaults().withCorrelationId("second")).join();
      assertEquals("second", h.version());
    }
  }

  @Test
  void connectionLossFailsInFlightAndNextCallReconnects() throws Exception {
    AtomicInteger calls = new AtomicInteger();
    try (ScriptedPeer peer =
            new ScriptedPeer(
                (p, c, req) -> {
                  if (calls.incrementAndGet() == 1) {
                    p.dropConnections(); // "daemon restarted" with this request in flight
                    return;
                  }
                  p.send(c, okHealth(req));
                });
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      HoldfastException e = assertThrows(HoldfastException.Unavailable.class, client::health);
      assertTrue(e.getMessage().contains("outcome is unknown"), e.getMessage());
      assertTrue(client.health().live());
    }
  }

  @Test
  void daemonDownWaitsUntilDeadlineThenUnavailable() throws Exception {
    Path dir = Files.createTempDirectory("hf-java-nobody");
    Path path = dir.resolve("nobody.sock");
    try (HoldfastClient client =
        HoldfastClient.builder(path).defaultTimeout(Duration.ofMillis(100)).build()) {
      HoldfastException e = assertThrows(HoldfastException.Unavailable.class, client::health);
      assertTrue(e.getMessage().contains(path.toString()), e.getMessage());
    }
    HoldfastException e =
        assertThrows(
            HoldfastException.Unavailable.class,
            () -> HoldfastClient.builder(path).defaultTimeout(Duration.ofMillis(100)).connect());
    assertTrue(e.getMessage().contains("cannot reach holdfastd"), e.getMessage());
    Files.delete(dir);
  }

  @Test
  void frameWithIdZeroFailsTheConnection() throws Exception {
    try (ScriptedPeer peer =
            new ScriptedPeer(
                (p, c, req) -> {
                  p.send(
                      c,
                      Response.newBuilder()
                          .setCode(Code.CODE_INVALID_ARGUMENT)
                          .setMessage("undecodable request frame")
                          .build());
                  c.close();
                });
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      HoldfastException e = assertThrows(HoldfastException.Unavailable.class, client::health);
      assertTrue(e.getMessage().contains("undecodable request frame"), e.getMessage());
    }
  }

  @Test
  void oversizedRequestFailsLocally() throws Exception {
    AtomicInteger seen = new AtomicInteger();
    try (ScriptedPeer peer = new ScriptedPeer((p, c, req) -> seen.incrementAndGet());
        HoldfastClient client = HoldfastClient.builder(peer.path).maxFrameBytes(128).build()) {
      List<String> ids = new ArrayList<>();
      for (int i = 0; i < 64; i++) {
        ids.add(String.format("resource-%03d", i));
      }
      HoldfastException e =
          assertThrows(
              HoldfastException.class, () -> client.hold("seat", "p", Target.seats(ids)).acquire());
      assertEquals(Code.CODE_RESOURCE_EXHAUSTED, e.getCode());
      assertEquals(0, seen.get(), "oversized request reached the socket");
    }
  }

  @Test
  void errorResponsesBecomeTypedExceptions() throws Exception {
    try (ScriptedPeer peer =
            new ScriptedPeer(
                (p, c, req) ->
                    p.send(
                        c,
                        Response.newBuilder()
                            .setId(req.getId())
                            .setCorrelationId(req.getCorrelationId())
                            .setCode(Code.CODE_HELD_BY_ANOTHER)
                            .setMessage("resource E8 is held by another token")
                            .setError(ErrorDetail.newBuilder().setResourceId("E8"))
                            .build()));
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      HoldfastException.HeldByAnother e =
          assertThrows(
              HoldfastException.HeldByAnother.class,
              () ->
                  client
                      .hold("seat", "run-1", Target.seats("E7", "E8"))
                      .ttl(Duration.ofMinutes(1))
                      .options(CallOptions.defaults().withCorrelationId("trace-1"))
                      .acquire());
      assertEquals(Code.CODE_HELD_BY_ANOTHER, e.getCode());
      assertEquals("E8", e.getResourceId());
      assertEquals("trace-1", e.getCorrelationId());
      assertEquals("hold", e.getOp());
      assertFalse(e.isRetryable());
    }
  }

  @Test
  void closeFailsInFlightAndLaterCalls() throws Exception {
    BlockingQueue<Request> got = new ArrayBlockingQueue<>(1);
    try (ScriptedPeer peer = new ScriptedPeer((p, c, req) -> got.add(req))) { // never answers
      HoldfastClient client = HoldfastClient.builder(peer.path).build();
      CompletableFuture<Health> inFlight = client.healthAsync(null);
      got.take();
      client.close();
      assertInstanceOf(HoldfastException.ClientClosed.class, failure(inFlight));
      HoldfastException e =
          assertThrows(
              HoldfastException.ClientClosed.class,
              () -> client.hold("seat", "p", Target.seats("A1")).acquire());
      assertTrue(e.getMessage().contains("client is closed"), e.getMessage());
      client.close(); // idempotent
    }
  }

  @Test
  void holdNeverPrintsItsTokenAndCloseReleases() throws Exception {
    String token = "1764412345678901.q83vEjRWeJCrze8SNFZ4kA";
    BlockingQueue<Request> releases = new ArrayBlockingQueue<>(4);
    try (ScriptedPeer peer =
            new ScriptedPeer(
                (p, c, req) -> {
                  Response.Builder r =
                      Response.newBuilder().setId(req.getId()).setCode(Code.CODE_OK);
                  if (req.hasHold()) {
                    r.setHold(
                        HoldResponse.newBuilder()
                            .setToken(token)
                            .setFence(1764412345678901L)
                            .setTtlMs(60000));
                  } else if (req.hasRelease()) {
                    releases.add(req);
                    r.setRelease(
                        dev.holdfast.v1.ReleaseResponse.newBuilder()
                            .setReleased(req.getRelease().getIdsCount()));
                  }
                  p.send(c, r.build());
                });
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      try (Hold h =
          client.hold("seat", "run-1", Target.seats("E7")).ttl(Duration.ofMinutes(1)).acquire()) {
        assertEquals(token, h.token());
        assertEquals(1764412345678901L, h.fence());
        assertEquals(Duration.ofMinutes(1), h.ttl());
        assertFalse(h.toString().contains(token), h.toString());
        assertFalse(h.toString().contains("q83vEjRWeJCrze8SNFZ4kA"), h.toString());
        assertTrue(h.toString().contains("E7"), h.toString());
      }
      Request release = releases.poll(5, TimeUnit.SECONDS);
      assertEquals(token, release.getRelease().getToken(), "try-with-resources released the hold");

      Hold confirmedLater = client.hold("seat", "run-1", Target.seats("E9")).acquire();
      confirmedLater.release();
      releases.take();
      confirmedLater.close(); // already released: nothing more is sent
      assertNull(releases.poll(200, TimeUnit.MILLISECONDS));
    }
  }

  @Test
  void timeoutMsRoundsUpAndStaysInUint32() {
    assertEquals(1, Transport.timeoutMs(1));
    assertEquals(2, Transport.timeoutMs(1_000_001));
    assertEquals(0xFFFF_FFFFL, Integer.toUnsignedLong(Transport.timeoutMs(Long.MAX_VALUE)));
    assertEquals(0, Transport.ttlMs(null));
    assertEquals(1500, Transport.ttlMs(Duration.ofMillis(1500)));
  }
}
