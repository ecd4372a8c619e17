package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.holdfast.v1.Code;
import dev.holdfast.v1.HealthResponse;
import dev.holdfast.v1.HoldResponse;
import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import dev.holdfast.v1.SessionEvent;
import dev.holdfast.v1.SessionHoldLost;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The read path of blocking calls (leader/followers: a caller reads its own answer while no other
 * thread reads, else waits for the reading thread to hand over its answer or the role) against a
 * {@link ScriptedPeer}.
 */
class ReadPathTest {

  private static Response okHealth(Request req) {
    return Response.newBuilder()
        .setId(req.getId())
        .setCorrelationId(req.getCorrelationId())
        .setCode(Code.CODE_OK)
        .setHealth(HealthResponse.newBuilder().setLive(true).setVersion(req.getCorrelationId()))
        .build();
  }

  private static CallOptions named(String corr, Duration timeout) {
    return new CallOptions(timeout, corr);
  }

  /** Requests as they come, answered only when the test says so. */
  private static final class Holding implements ScriptedPeer.Handler {
    final Map<String, Request> byCorr = new ConcurrentHashMap<>();
    final BlockingQueue<Request> arrived = new ArrayBlockingQueue<>(256);
    volatile SocketChannel conn;

    @Override
    public void handle(ScriptedPeer p, SocketChannel c, Request req) {
      conn = c;
      if (req.getCorrelationId().equals("warm")) { // answered at once: connects the client
        p.send(c, okHealth(req));
        return;
      }
      byCorr.put(req.getCorrelationId(), req);
      arrived.add(req);
    }

    void answer(ScriptedPeer p, String corr) {
      p.send(conn, okHealth(byCorr.get(corr)));
    }

    void awaitArrived(int n) throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while (byCorr.size() < n) {
        assertTrue(System.nanoTime() < deadline, "requests did not arrive");
        Thread.sleep(2);
      }
    }
  }

  @Test
  void blockingCallersOnManyThreadsGetTheirOwnAnswersOutOfOrder() throws Exception {
    int n = 16;
    List<Request> held = new ArrayList<>();
    try (ScriptedPeer peer =
            new ScriptedPeer(
                (p, c, req) -> {
                  synchronized (held) {
                    held.add(req);
                    if (held.size() == n) { // all in flight: answer newest first
                      for (int i = n - 1; i >= 0; i--) {
                        p.send(c, okHealth(held.get(i)));
                      }
                      held.clear();
                    }
                  }
                });
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      ExecutorService pool = Executors.newFixedThreadPool(n);
      try {
        for (int round = 0; round < 20; round++) {
          List<Future<String>> answers = new ArrayList<>();
          for (int i = 0; i < n; i++) {
            String corr = "r" + round + "-caller-" + i;
            answers.add(
                pool.submit(() -> client.health(named(corr, Duration.ofSeconds(5))).version()));
          }
          for (int i = 0; i < n; i++) {
            assertEquals("r" + round + "-caller-" + i, answers.get(i).get(10, TimeUnit.SECONDS));
          }
        }
      } finally {
        pool.shutdownNow();
      }
    }
  }

  @Test
  void theLeaderHandsTheRoleToAWaitingCallerWhenItsOwnAnswerCame() throws Exception {
    Holding d = new Holding();
    try (ScriptedPeer peer = new ScriptedPeer(d);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      client.health(named("warm", Duration.ofSeconds(5))); // connected
      CompletableFuture<String> first =
          CompletableFuture.supplyAsync(
              () -> client.health(named("first", Duration.ofSeconds(5))).version());
      d.awaitArrived(1); // "first" is sent: it reads (it is alone)
      CompletableFuture<String> second =
          CompletableFuture.supplyAsync(
              () -> client.health(named("second", Duration.ofSeconds(5))).version());
      d.awaitArrived(2);
      Thread.sleep(50); // "second" parks behind the reading "first"
      d.answer(peer, "first");
      assertEquals("first", first.get(5, TimeUnit.SECONDS));
      Thread.sleep(50); // nothing is read now but by whoever took the role over
      d.answer(peer, "second");
      assertEquals("second", second.get(5, TimeUnit.SECONDS), "the role was handed over");
    }
  }

  @Test
  void theLeaderDeliversAWaitingCallersAnswerAndKeepsReadingForItsOwn() throws Exception {
    Holding d = new Holding();
    try (ScriptedPeer peer = new ScriptedPeer(d);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      client.health(named("warm", Duration.ofSeconds(5)));
      CompletableFuture<String> first =
          CompletableFuture.supplyAsync(
              () -> client.health(named("first", Duration.ofSeconds(5))).version());
      d.awaitArrived(1);
      CompletableFuture<String> second =
          CompletableFuture.supplyAsync(
              () -> client.health(named("second", Duration.ofSeconds(5))).version());
      d.awaitArrived(2);
      d.answer(peer, "second");
      assertEquals("second", second.get(5, TimeUnit.SECONDS));
      assertTrue(!first.isDone());
      d.answer(peer, "first");
      assertEquals("first", first.get(5, TimeUnit.SECONDS));
    }
  }

  @Test
  void asyncAnswersReadByABlockingCallerCompleteOnTheCallbackExecutor() throws Exception {
    Holding d = new Holding();
    ExecutorService callbacks =
        Executors.newSingleThreadExecutor(r -> new Thread(r, "test-callbacks"));
    try (ScriptedPeer peer = new ScriptedPeer(d);
        HoldfastClient client =
            HoldfastClient.builder(peer.path).callbackExecutor(callbacks).build()) {
      client.health(named("warm", Duration.ofSeconds(5)));
      CompletableFuture<Health> async = client.healthAsync(named("async", Duration.ofSeconds(5)));
      AtomicReference<String> completedOn = new AtomicReference<>();
      CompletableFuture<Health> seen =
          async.whenComplete((r, e) -> completedOn.set(Thread.currentThread().getName()));
      d.awaitArrived(1);
      CompletableFuture<String> blocking =
          CompletableFuture.supplyAsync(
              () -> client.health(named("blocking", Duration.ofSeconds(5))).version());
      d.awaitArrived(2);
      d.answer(peer, "async");
      d.answer(peer, "blocking");
      assertEquals("blocking", blocking.get(5, TimeUnit.SECONDS));
      assertEquals("async", seen.get(5, TimeUnit.SECONDS).version());
      assertEquals("test-callbacks", completedOn.get());
    } finally {
      callbacks.shutdownNow();
    }
  }

  @Test
  void aSessionEventWithNoCallInFlightReachesItsHold() throws Exception {
    AtomicReference<SocketChannel> conn = new AtomicReference<>();
    try (ScriptedPeer peer =
            new ScriptedPeer(
                (p, c, req) -> {
                  conn.set(c);
                  Response.Builder r =
                      Response.newBuilder()
                          .setId(req.getId())
                          .setCorrelationId(req.getCorrelationId())
                          .setCode(Code.CODE_OK);
                  if (req.hasHold()) {
                    r.setHold(
                        HoldResponse.newBuilder()
                            .setToken("7.q83vEjRWeJCrze8SNFZ4kA")
                            .setFence(7)
                            .setTtlMs(5000));
                  } else {
                    r.setHealth(HealthResponse.newBuilder().setLive(true));
                  }
                  p.send(c, r.build());
                });
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      CountDownLatch lost = new CountDownLatch(1);
      Hold h =
          client
              .hold("seat", "p", Target.seats("A1"))
              .session()
              .onLost(x -> lost.countDown())
              .acquire();
      Thread.sleep(50); // nothing in flight now
      peer.send(
          conn.get(),
          Response.newBuilder()
              .setId(0)
              .setCode(Code.CODE_OK)
              .setSessionEvent(
                  SessionEvent.newBuilder()
                      .addLost(
                          SessionHoldLost.newBuilder()
                              .setNamespace("seat")
                              .setPartition("p")
                              .addIds("A1")
                              .setFence(7)
                              .setReason(Code.CODE_NOT_HELD)
                              .setResourceId("A1")))
              .build());
      assertTrue(lost.await(5, TimeUnit.SECONDS), "the session event was read and dispatched");
      assertEquals(Code.CODE_NOT_HELD, h.lost().orElseThrow().getCode());
      assertTrue(client.health().live(), "calls go on after the event");
    }
  }

  @Test
  void aBrokenConnectionFailsEveryWaitingCaller() throws Exception {
    int n = 6;
    Holding d = new Holding();
    try (ScriptedPeer peer = new ScriptedPeer(d);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      ExecutorService pool = Executors.newFixedThreadPool(n);
      try {
        List<Future<?>> calls = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          String corr = "c" + i;
          calls.add(pool.submit(() -> client.health(named(corr, Duration.ofSeconds(10)))));
        }
        d.awaitArrived(n);
        long t0 = System.nanoTime();
        peer.dropConnections();
        for (Future<?> f : calls) {
          Exception e =
              assertThrows(
                  java.util.concurrent.ExecutionException.class,
                  () -> f.get(5, TimeUnit.SECONDS));
          HoldfastException he = assertInstanceOf(HoldfastException.class, e.getCause());
          assertEquals(Code.CODE_UNAVAILABLE, he.getCode());
        }
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(3), "failed at once");
      } finally {
        pool.shutdownNow();
      }
      d.byCorr.clear();
      CompletableFuture<String> next =
          CompletableFuture.supplyAsync(
              () -> client.health(named("next", Duration.ofSeconds(5))).version());
      d.awaitArrived(1);
      d.answer(peer, "next");
      assertEquals("next", next.get(5, TimeUnit.SECONDS), "the next call reconnects");
    }
  }

  @Test
  void deadlinesOfTheLeaderAndOfAWaitingCallerAreKept() throws Exception {
    Holding d = new Holding();
    try (ScriptedPeer peer = new ScriptedPeer(d);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      long t0 = System.nanoTime();
      CompletableFuture<Object> leader =
          CompletableFuture.supplyAsync(
              () -> client.health(named("leader", Duration.ofMillis(200))));
      d.awaitArrived(1);
      CompletableFuture<Object> follower =
          CompletableFuture.supplyAsync(
              () -> client.health(named("follower", Duration.ofMillis(400))));
      CompletableFuture<String> patient =
          CompletableFuture.supplyAsync(
              () -> client.health(named("patient", Duration.ofSeconds(5))).version());
      d.awaitArrived(3);
      for (CompletableFuture<Object> f : List.of(leader, follower)) {
        Exception e = assertThrows(Exception.class, () -> f.get(5, TimeUnit.SECONDS));
        HoldfastException he = assertInstanceOf(HoldfastException.class, e.getCause());
        assertEquals(Code.CODE_DEADLINE_EXCEEDED, he.getCode());
      }
      long took = System.nanoTime() - t0;
      assertTrue(took >= TimeUnit.MILLISECONDS.toNanos(400), "not before the deadline");
      assertTrue(took < TimeUnit.SECONDS.toNanos(3), "soon after it: " + took);
      d.answer(peer, "leader"); // too late: dropped
      d.answer(peer, "patient");
      assertEquals("patient", patient.get(5, TimeUnit.SECONDS), "still read after both left");
    }
  }

  @Test
  void aBlockingCallWhoseFrameCouldNotBeWrittenIsSentAgainOnANewConnection() throws Exception {
    AtomicReference<SocketChannel> first = new AtomicReference<>();
    java.util.concurrent.atomic.AtomicInteger seen = new java.util.concurrent.atomic.AtomicInteger();
    try (ScriptedPeer peer =
            new ScriptedPeer(
                (p, c, req) -> {
                  first.compareAndSet(null, c);
                  seen.incrementAndGet();
                  p.send(c, okHealth(req));
                });
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      assertEquals("one", client.health(named("one", Duration.ofSeconds(5))).version());
      peer.dropConnections(); // the daemon restarted while the client sat idle: nobody reads
      Thread.sleep(50);
      // The write on the dead connection fails (EPIPE): never seen by the daemon, sent again.
      assertEquals("two", client.health(named("two", Duration.ofSeconds(5))).version());
      assertEquals(2, seen.get(), "each call reached the daemon once");
    }
  }
}
