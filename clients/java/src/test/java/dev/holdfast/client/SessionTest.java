package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.holdfast.v1.Code;
import dev.holdfast.v1.HealthResponse;
import dev.holdfast.v1.HoldResponse;
import dev.holdfast.v1.ReleaseResponse;
import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import dev.holdfast.v1.SessionEvent;
import dev.holdfast.v1.SessionHoldLost;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Session holds and waiting in line against a {@link ScriptedPeer}: what goes on the wire, and
 * session events (id 0) routed to their holds. The daemon's side is in {@link SessionLiveTest} and
 * {@link LiveWaitTest}.
 */
class SessionTest {
  private static final String TOKEN_RANDOM = "q83vEjRWeJCrze8SNFZ4kA";

  /** Answers Hold with fence 100, 101, ...; Release and Health with OK. */
  private static final class Daemon implements ScriptedPeer.Handler {
    final AtomicLong fences = new AtomicLong(100);
    final BlockingQueue<Request> requests = new ArrayBlockingQueue<>(64);
    volatile SessionEvent before; // sent before the next Hold's answer
    volatile SocketChannel conn;

    @Override
    public void handle(ScriptedPeer p, SocketChannel c, Request req) {
      conn = c;
      requests.add(req);
      Response.Builder r =
          Response.newBuilder()
              .setId(req.getId())
              .setCorrelationId(req.getCorrelationId())
              .setCode(Code.CODE_OK);
      if (req.hasHold()) {
        long fence = fences.getAndIncrement();
        SessionEvent early = before;
        if (early != null) {
          before = null;
          p.send(c, event(early.getLost(0).toBuilder().setFence(fence).build()));
        }
        r.setHold(
            HoldResponse.newBuilder()
                .setToken(fence + "." + TOKEN_RANDOM)
                .setFence(fence)
                .setTtlMs(req.getHold().getSession() ? 5000 : req.getHold().getTtlMs()));
      } else if (req.hasRelease()) {
        r.setRelease(ReleaseResponse.newBuilder().setReleased(req.getRelease().getIdsCount()));
      } else {
        r.setHealth(HealthResponse.newBuilder().setLive(true));
      }
      p.send(c, r.build());
    }
  }

  private static SessionHoldLost lost(String partition, long fence, Code reason, String id) {
    return SessionHoldLost.newBuilder()
        .setNamespace("seat")
        .setPartition(partition)
        .addIds(id)
        .setFence(fence)
        .setReason(reason)
        .setResourceId(id)
        .setMessage("resource " + id + " is not held any more")
        .build();
  }

  private static Response event(SessionHoldLost... lost) {
    return Response.newBuilder()
        .setId(0)
        .setCode(Code.CODE_OK)
        .setMessage("session holds were lost")
        .setSessionEvent(SessionEvent.newBuilder().addAllLost(List.of(lost)))
        .build();
  }

  private static void eventually(java.util.function.BooleanSupplier cond, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!cond.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for: " + what);
      }
      Thread.sleep(5);
    }
  }

  @Test
  void sessionHoldSendsSessionAndNoTtl() throws Exception {
    Daemon d = new Daemon();
    try (ScriptedPeer peer = new ScriptedPeer(d);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      try (Hold h = client.hold("seat", "run-1", Target.seats("E7", "E8")).session().acquire()) {
        Request req = d.requests.take();
        assertTrue(req.getHold().getSession());
        assertEquals(0, req.getHold().getTtlMs());
        assertEquals(0, req.getHold().getWaitMs());
        assertEquals(List.of("E7", "E8"), req.getHold().getIdsList());
        assertTrue(h.session());
        assertEquals(Duration.ofSeconds(5), h.ttl(), "the session TTL the daemon applied");
        assertTrue(h.lost().isEmpty());
        assertTrue(h.toString().contains("session"), h.toString());
        assertFalse(h.toString().contains(TOKEN_RANDOM), h.toString());
      }
      assertTrue(d.requests.take().hasRelease(), "leaving the scope releases a session hold");

      Hold plain =
          client.hold("seat", "run-1", Target.seats("E9")).ttl(Duration.ofSeconds(30)).acquire();
      Request req = d.requests.take();
      assertFalse(req.getHold().getSession());
      assertEquals(30000, req.getHold().getTtlMs());
      assertFalse(plain.session());
    }
  }

  @Test
  void sessionHoldWithTtlIsRefusedLocally() throws Exception {
    Daemon d = new Daemon();
    try (ScriptedPeer peer = new ScriptedPeer(d);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      HoldfastException.InvalidArgument e =
          assertThrows(
              HoldfastException.InvalidArgument.class,
              () ->
                  client
                      .hold("seat", "run-1", Target.seats("E7"))
                      .session()
                      .ttl(Duration.ofSeconds(30))
                      .acquire());
      assertEquals("ttl_ms", e.getField());
      assertEquals(Code.CODE_INVALID_ARGUMENT, e.getCode());
      assertNull(d.requests.poll(100, TimeUnit.MILLISECONDS), "nothing was sent");
    }
  }

  @Test
  void sessionEventReachesItsHoldAndTheConnectionStays() throws Exception {
    Daemon d = new Daemon();
    BlockingQueue<Hold> reported = new ArrayBlockingQueue<>(4);
    try (ScriptedPeer peer = new ScriptedPeer(d);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      Hold a =
          client
              .hold("seat", "run-1", Target.seats("E7"))
              .session()
              .onLost(reported::add)
              .acquire();
      Hold b =
          client
              .hold("seat", "run-1", Target.seats("E8"))
              .session()
              .onLost(reported::add)
              .acquire();
      Hold other = client.hold("seat", "run-2", Target.seats("E7")).session().acquire();
      assertEquals(3, client.sessionHoldCount());

      // Fence of b, but in another partition: not b. Then b itself, taken over.
      peer.send(
          d.conn,
          event(
              lost("run-9", b.fence(), Code.CODE_NOT_HELD, "E8"),
              lost("run-1", b.fence(), Code.CODE_HELD_BY_ANOTHER, "E8")));
      assertSame(b, reported.poll(5, TimeUnit.SECONDS));
      HoldfastException why = b.lost().orElseThrow();
      assertInstanceOf(HoldfastException.HeldByAnother.class, why);
      assertEquals("E8", why.getResourceId());
      assertTrue(why.getMessage().contains("session hold lost"), why.getMessage());
      assertTrue(b.toString().contains("lost=HELD_BY_ANOTHER"), b.toString());
      assertTrue(a.lost().isEmpty());
      assertTrue(other.lost().isEmpty());

      // Not the end of the connection: calls go on, the other holds stay in the session.
      assertTrue(client.health().live());
      assertEquals(2, client.sessionHoldCount());

      // A second report of the same hold changes nothing; the listener ran once.
      peer.send(d.conn, event(lost("run-1", b.fence(), Code.CODE_NOT_HELD, "E8")));
      assertTrue(client.health().live());
      assertInstanceOf(HoldfastException.HeldByAnother.class, b.lost().orElseThrow());
      assertNull(reported.poll(100, TimeUnit.MILLISECONDS));

      // Leaving the scope of a lost hold still sends the owner-checked Release.
      d.requests.clear();
      b.close();
      assertTrue(d.requests.take().hasRelease());

      // A hold released through its object leaves the session: no report afterwards.
      a.release();
      assertEquals(1, client.sessionHoldCount());
      peer.send(d.conn, event(lost("run-1", a.fence(), Code.CODE_NOT_HELD, "E7")));
      assertTrue(client.health().live());
      assertTrue(a.lost().isEmpty());
    }
  }

  @Test
  void eventReadBeforeTheHoldIsKeptForIt() throws Exception {
    Daemon d = new Daemon();
    d.before =
        SessionEvent.newBuilder().addLost(lost("run-1", 0, Code.CODE_CONFIRMED, "E7")).build();
    AtomicInteger calls = new AtomicInteger();
    try (ScriptedPeer peer = new ScriptedPeer(d);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      Hold h =
          client
              .hold("seat", "run-1", Target.seats("E7"))
              .session()
              .onLost(x -> calls.incrementAndGet())
              .acquire();
      HoldfastException why = h.lost().orElseThrow(() -> new AssertionError("not reported"));
      assertInstanceOf(HoldfastException.Confirmed.class, why);
      eventually(() -> calls.get() == 1, "onLost ran");
      assertEquals(0, client.sessionHoldCount());
    }
  }

  @Test
  void connectionEndLosesEverySessionHold() throws Exception {
    Daemon d = new Daemon();
    AtomicReference<Hold> reported = new AtomicReference<>();
    try (ScriptedPeer peer = new ScriptedPeer(d);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      Hold s =
          client
              .hold("seat", "run-1", Target.seats("E7"))
              .session()
              .onLost(reported::set)
              .acquire();
      Hold plain = client.hold("seat", "run-1", Target.seats("E8")).acquire();
      peer.dropConnections(); // the daemon went away
      eventually(() -> s.lost().isPresent(), "session hold lost");
      assertInstanceOf(HoldfastException.Unavailable.class, s.lost().get());
      assertTrue(s.lost().get().getMessage().contains("connection"), s.lost().get().getMessage());
      eventually(() -> reported.get() == s, "onLost ran");
      assertTrue(plain.lost().isEmpty(), "a plain hold is not bound to the connection");

      // The next call reconnects; a session hold taken there is fine.
      Hold again = client.hold("seat", "run-1", Target.seats("E7")).session().acquire();
      assertTrue(again.lost().isEmpty());
      client.close();
      assertInstanceOf(HoldfastException.Unavailable.class, again.lost().orElseThrow());
    }
  }

  @Test
  void otherIdZeroFramesStayFatalWithSessionHolds() throws Exception {
    Daemon d = new Daemon();
    try (ScriptedPeer peer = new ScriptedPeer(d);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      Hold s = client.hold("seat", "run-1", Target.seats("E7")).session().acquire();
      peer.send(
          d.conn,
          Response.newBuilder()
              .setCode(Code.CODE_INVALID_ARGUMENT)
              .setMessage("undecodable request frame")
              .build());
      eventually(() -> s.lost().isPresent(), "the connection ended");
      assertTrue(s.lost().get().getMessage().contains("undecodable"), s.lost().get().getMessage());
    }
  }

  @Test
  void waitIsSentAndTheDeadlineCoversIt() throws Exception {
    Daemon d = new Daemon();
    try (ScriptedPeer peer = new ScriptedPeer(d);
        HoldfastClient client =
            HoldfastClient.builder(peer.path).defaultTimeout(Duration.ofSeconds(2)).build()) {
      client.hold("seat", "run-1", Target.seats("E7")).waitFor(Duration.ofSeconds(3)).acquire();
      Request req = d.requests.take();
      assertEquals(3000, req.getHold().getWaitMs());
      int min = 3000 + (int) HoldfastClient.WAIT_MARGIN.toMillis();
      assertTrue(
          req.getTimeoutMs() > 3000 && req.getTimeoutMs() <= min, // above the 2 s default
          "timeout_ms " + req.getTimeoutMs() + " covers the wait and a margin");

      // A longer deadline of the caller's stays; the wait goes with a session hold too.
      client
          .hold("seat", "run-1", Target.seats("E8"))
          .session()
          .waitFor(Duration.ofMillis(1500))
          .timeout(Duration.ofSeconds(20))
          .correlationId("wait-1")
          .acquire();
      req = d.requests.take();
      assertEquals(1500, req.getHold().getWaitMs());
      assertTrue(req.getHold().getSession());
      assertEquals("wait-1", req.getCorrelationId());
      assertTrue(req.getTimeoutMs() > 19000, "timeout_ms " + req.getTimeoutMs());

      // No wait: no wait_ms, the default deadline.
      client.hold("seat", "run-1", Target.seats("E9")).acquire();
      req = d.requests.take();
      assertEquals(0, req.getHold().getWaitMs());
      assertTrue(req.getTimeoutMs() <= 2000, "timeout_ms " + req.getTimeoutMs());
      assertThrows(
          IllegalArgumentException.class,
          () -> client.hold("seat", "run-1", Target.seats("E9")).waitFor(Duration.ofMillis(-1)));
    }
  }

  @Test
  void waitingHoldRequestMatchesTheGoldenFrame() throws Exception {
    // protos/testdata/waiting_hold_request.bin: Hold E7 with a 60 s TTL, waiting up to 3 s.
    Daemon d = new Daemon();
    try (ScriptedPeer peer = new ScriptedPeer(d);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      client
          .hold("seat", "run-2026-12-01-KTX101", Target.seats("E7"))
          .ttl(Duration.ofMinutes(1))
          .waitFor(Duration.ofSeconds(3))
          .correlationId("wait-1")
          .acquire();
      Request sent = d.requests.take();
      byte[] frame =
          java.nio.file.Files.readAllBytes(
              RepoRoot.get().resolve("protos/testdata/waiting_hold_request.bin"));
      Request golden =
          Request.parseFrom(
              java.util.Arrays.copyOfRange(frame, Framing.HEADER_BYTES, frame.length));
      assertEquals(golden.getHold(), sent.getHold());
      assertEquals(golden.getCorrelationId(), sent.getCorrelationId());
    }
  }
}
