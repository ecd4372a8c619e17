package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.holdfast.v1.Code;
import dev.holdfast.v1.ResourceState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.ExtendWith;

/** Against a real holdfastd (Redis, and PostgreSQL for Confirm); see {@link LiveDaemon}. */
@ExtendWith(LiveDaemon.class)
class HoldfastLiveTest {
  private static final Duration T = Duration.ofSeconds(5);

  private final List<HoldfastClient> clients = new ArrayList<>();
  private String ns;
  private String partition;

  @BeforeEach
  void setUp(TestInfo info) {
    LiveDaemon.Stack s = LiveDaemon.stack;
    assumeTrue(s.skipReason == null, s.skipReason);
    if (s.failure != null) {
      fail("live daemon did not start: " + s.failure);
    }
    String envNs = System.getenv("HOLDFAST_TEST_NAMESPACE");
    ns = envNs == null || envNs.isEmpty() ? "seat" : envNs;
    // Each test (and each run) gets its own partition on a shared daemon.
    partition =
        "java-" + info.getTestMethod().map(m -> m.getName()).orElse("t") + "-" + System.nanoTime();
  }

  @AfterEach
  void tearDown() {
    clients.forEach(HoldfastClient::close);
  }

  private HoldfastClient client() {
    HoldfastClient c = HoldfastClient.builder(LiveDaemon.stack.socket).defaultTimeout(T).connect();
    clients.add(c);
    return c;
  }

  private static void assumeConfirmSupported(HoldfastException e) {
    assumeTrue(
        e.getCode() != Code.CODE_UNIMPLEMENTED && e.getCode() != Code.CODE_FAILED_PRECONDITION,
        "daemon does not support Confirm here yet: " + e.getMessage());
  }

  @Test
  void health() {
    Health h = client().health();
    assertTrue(h.live() && h.ready(), h.toString());
    assertEquals("up", h.redis());
    assertFalse(h.version().isEmpty());
  }

  @Test
  void holdExtendReleaseRoundTrip() {
    HoldfastClient c = client();
    List<String> ids = List.of("E7", "E8", "E9");
    Hold h = c.hold(ns, partition, Target.seats(ids)).ttl(Duration.ofSeconds(30)).acquire();
    assertFalse(h.token().isEmpty());
    assertNotEquals(0, h.fence());
    assertEquals(Duration.ofSeconds(30), h.ttl());
    assertFalse(h.degraded());
    assertTrue(
        h.token().startsWith(Long.toUnsignedString(h.fence()) + "."), "fence travels in token");
    assertFalse(h.toString().contains(h.token()));

    for (ResourceStatus r : h.status().resources()) {
      assertEquals(ResourceState.RESOURCE_STATE_HELD, r.state(), r.toString());
      assertTrue(r.owned(), r.toString());
      assertTrue(
          r.ttl().compareTo(Duration.ZERO) > 0 && r.ttl().compareTo(Duration.ofSeconds(30)) <= 0);
    }

    assertEquals(Duration.ofMinutes(2), h.extend(Duration.ofMinutes(2)));
    for (ResourceStatus r : c.status(ns, partition, Target.seats(ids)).resources()) {
      assertTrue(r.ttl().compareTo(Duration.ofSeconds(30)) > 0, r.toString());
      assertFalse(r.owned(), "owned needs the token");
    }

    assertEquals(3, h.release());
    HoldfastException.NotHeld again = assertThrows(HoldfastException.NotHeld.class, h::release);
    assertEquals(Code.CODE_NOT_HELD, again.getCode());
    assertThrows(HoldfastException.NotHeld.class, () -> h.extend(Duration.ofMinutes(1)));
    for (ResourceStatus r : c.status(ns, partition, Target.seats(ids)).resources()) {
      assertEquals(ResourceState.RESOURCE_STATE_FREE, r.state(), r.toString());
    }
  }

  @Test
  void tryWithResourcesReleases() {
    HoldfastClient c = client();
    try (Hold h =
        c.hold(ns, partition, Target.seats("T1", "T2")).ttl(Duration.ofSeconds(30)).acquire()) {
      assertEquals(2, h.status().resources().stream().filter(ResourceStatus::owned).count());
    }
    for (ResourceStatus r : c.status(ns, partition, Target.seats("T1", "T2")).resources()) {
      assertEquals(ResourceState.RESOURCE_STATE_FREE, r.state(), r.toString());
    }
  }

  @Test
  void invalidArgumentAndUnknownNamespace() {
    HoldfastClient c = client();
    HoldfastException.InvalidArgument e =
        assertThrows(
            HoldfastException.InvalidArgument.class,
            () -> c.hold(ns, partition, Target.seats("E7", "bad id")).acquire());
    assertFalse(e.getField().isEmpty(), e.getMessage());
    HoldfastException nf =
        assertThrows(
            HoldfastException.class,
            () -> c.hold("no-such-namespace", partition, Target.seats("E7")).acquire());
    assertEquals(Code.CODE_NOT_FOUND, nf.getCode());
  }

  @Test
  void contentionOneWinner() {
    HoldfastClient a = client();
    HoldfastClient b = client();
    List<String> ids = List.of("E7", "E8", "E9");

    CompletableFuture<Hold> fa =
        a.hold(ns, partition, Target.seats(ids)).ttl(Duration.ofSeconds(30)).acquireAsync();
    CompletableFuture<Hold> fb =
        b.hold(ns, partition, Target.seats(ids)).ttl(Duration.ofSeconds(30)).acquireAsync();
    List<Hold> winners = new ArrayList<>();
    List<HoldfastException> losers = new ArrayList<>();
    for (CompletableFuture<Hold> f : List.of(fa, fb)) {
      try {
        winners.add(f.join());
      } catch (CompletionException e) {
        losers.add((HoldfastException) e.getCause());
      }
    }
    assertEquals(1, winners.size(), "exactly one winner; losers: " + losers);
    assertTrue(losers.get(0) instanceof HoldfastException.HeldByAnother, losers.toString());
    assertTrue(ids.contains(losers.get(0).getResourceId()), losers.get(0).getMessage());
    winners.get(0).release();

    // All or nothing: a hold overlapping a held seat takes none of them.
    Hold e8 = a.hold(ns, partition, Target.seats("E8")).ttl(Duration.ofSeconds(30)).acquire();
    HoldfastException.HeldByAnother e =
        assertThrows(
            HoldfastException.HeldByAnother.class,
            () ->
                b.hold(ns, partition, Target.seats(ids))
                    .ttl(Duration.ofSeconds(30))
                    .options(CallOptions.defaults().withCorrelationId("java-contention-check"))
                    .acquire());
    assertEquals("E8", e.getResourceId());
    assertEquals("java-contention-check", e.getCorrelationId());
    for (ResourceStatus r : b.status(ns, partition, Target.seats("E7", "E9")).resources()) {
      assertEquals(ResourceState.RESOURCE_STATE_FREE, r.state(), r.toString());
    }
    // Another token cannot release it.
    Hold stranger = b.resume(ns, partition, Target.seats("E8"), "1.AAAAAAAAAAAAAAAAAAAAAA");
    assertThrows(HoldfastException.class, stranger::release);
    assertEquals(1, e8.release());

    try (Hold h = b.hold(ns, partition, Target.seats(ids)).ttl(Duration.ofSeconds(30)).acquire()) {
      assertTrue(Long.compareUnsigned(h.fence(), e8.fence()) > 0, "fence rises");
    }
  }

  @Test
  void expiry() throws Exception {
    HoldfastClient c = client();
    Hold h = c.hold(ns, partition, Target.seats("A1")).ttl(Duration.ofMillis(100)).acquire();
    Thread.sleep(500); // well past the TTL
    assertThrows(HoldfastException.NotHeld.class, () -> h.extend(Duration.ofMinutes(1)));
    try (Hold h2 = c.hold(ns, partition, Target.seats("A1")).ttl(Duration.ofMinutes(1)).acquire()) {
      assertNotEquals(h.token(), h2.token());
    }
  }

  @Test
  void manyInFlightOnOneConnection() {
    HoldfastClient c = client();
    int n = 200;
    List<CompletableFuture<Hold>> futures = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      futures.add(
          c.hold(ns, partition, Target.seats("S" + i))
              .ttl(Duration.ofSeconds(30))
              .options(CallOptions.timeout(Duration.ofSeconds(10)))
              .acquireAsync());
    }
    Set<Long> fences = new HashSet<>();
    List<CompletableFuture<Integer>> releases = new ArrayList<>();
    for (CompletableFuture<Hold> f : futures) {
      Hold h = f.join();
      assertTrue(fences.add(h.fence()), "fence granted twice: " + h.fence());
      releases.add(h.releaseAsync(CallOptions.timeout(Duration.ofSeconds(10))));
    }
    for (CompletableFuture<Integer> r : releases) {
      assertEquals(1, r.join());
    }
  }

  @Test
  void confirmAndIdempotentRetry() {
    HoldfastClient c = client();
    List<String> ids = List.of("E7", "E8", "E9");
    String key = "order-" + partition;
    Hold h = c.hold(ns, partition, Target.seats(ids)).ttl(Duration.ofSeconds(30)).acquire();
    ConfirmOptions opts = new ConfirmOptions(key, "customer-42", new byte[] {0, 1, 2, (byte) 0xff});

    ConfirmResult conf;
    try {
      conf = h.confirm(opts, CallOptions.timeout(Duration.ofSeconds(10)));
    } catch (HoldfastException e) {
      assumeConfirmSupported(e);
      throw e;
    }
    assertFalse(conf.replayed());
    assertEquals(h.fence(), conf.fence());
    assertEquals(3, conf.claims().size());
    Set<String> claimed = new HashSet<>();
    for (Claim cl : conf.claims()) {
      claimed.add(cl.resourceId());
      assertEquals(h.fence(), cl.fence());
      assertEquals("customer-42", cl.reference());
      assertTrue(cl.confirmedAt().toEpochMilli() > 0);
    }
    assertEquals(Set.copyOf(ids), claimed);

    // The caller lost the answer and retries with the same key: same result, a replay.
    ConfirmResult again = h.confirm(opts);
    assertTrue(again.replayed());
    assertEquals(conf.fence(), again.fence());
    assertEquals(3, again.claims().size());

    assertThrows(
        HoldfastException.Confirmed.class,
        () -> c.hold(ns, partition, Target.seats("E8")).acquire());

    CancelResult res;
    try {
      res = c.cancel(ns, partition, Target.seats(ids), "refund-" + partition, "customer-42");
    } catch (HoldfastException e) {
      assumeConfirmSupported(e);
      throw e;
    }
    assertEquals(3, res.cancelled());
    assertFalse(res.replayed());
    assertTrue(
        c.cancel(ns, partition, Target.seats(ids), "refund-" + partition, "customer-42")
            .replayed());
    try (Hold h2 = c.hold(ns, partition, Target.seats(ids)).acquire()) {
      assertEquals(3, h2.target().ids().size());
    }
  }

  @Test
  void confirmAfterReleaseIsHoldLost() {
    HoldfastClient c = client();
    Hold h = c.hold(ns, partition, Target.seats("B1")).ttl(Duration.ofSeconds(30)).acquire();
    h.release();
    HoldfastException e =
        assertThrows(
            HoldfastException.class, () -> h.confirm(ConfirmOptions.of("lost-" + partition, "")));
    assumeConfirmSupported(e);
    assertTrue(e instanceof HoldfastException.HoldLost, e.getMessage());
  }

  @Test
  void deadlineExceededBeforeSending() {
    HoldfastClient c = client();
    HoldfastException e =
        assertThrows(
            HoldfastException.DeadlineExceeded.class,
            () ->
                c.hold(ns, partition, Target.seats("D1"))
                    .options(CallOptions.timeout(Duration.ofNanos(1)))
                    .acquire());
    assertEquals(Code.CODE_DEADLINE_EXCEEDED, e.getCode());
    assertEquals(
        ResourceState.RESOURCE_STATE_FREE,
        c.status(ns, partition, Target.seats("D1")).resources().get(0).state());
  }

  @Test
  void deadlineExceededWhileDaemonStalls() throws Exception {
    LiveDaemon.Stack s = LiveDaemon.stack;
    assumeTrue(s.managed(), "needs a test stack's directory");
    HoldfastClient c = client();
    c.health();
    long pid = s.daemonPid().orElseThrow(() -> new AssertionError("holdfastd process not found"));
    signal("STOP", pid); // freeze the daemon so the answer cannot come in time
    try {
      assertThrows(
          HoldfastException.DeadlineExceeded.class,
          () ->
              c.hold(ns, partition, Target.seats("D2"))
                  .ttl(Duration.ofSeconds(30))
                  .options(CallOptions.timeout(Duration.ofMillis(300)))
                  .acquire());
    } finally {
      signal("CONT", pid);
    }
    // Whatever the daemon answers late must not reach the next caller; the connection is usable.
    assertTrue(c.health(CallOptions.timeout(Duration.ofSeconds(10))).live());
  }

  private static void signal(String sig, long pid) throws Exception {
    Process p = new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).inheritIO().start();
    assertTrue(p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0, "kill -" + sig + " " + pid);
  }

  @Test
  void daemonRestartedClientReconnects() throws Exception {
    LiveDaemon.Stack s = LiveDaemon.stack;
    assumeTrue(s.managed(), "needs a test stack's directory");
    HoldfastClient c = client();
    c.hold(ns, partition, Target.seats("R1")).ttl(Duration.ofSeconds(30)).acquire();

    s.down();
    HoldfastException e =
        assertThrows(
            HoldfastException.class, () -> c.health(CallOptions.timeout(Duration.ofMillis(500))));
    assertTrue(e.isRetryable(), e.getMessage());
    s.up();

    // Same client, new connection under the hood.
    try (Hold h =
        c.hold(ns, partition, Target.seats("R2"))
            .ttl(Duration.ofSeconds(30))
            .options(CallOptions.timeout(Duration.ofSeconds(10)))
            .acquire()) {
      assertFalse(h.token().isEmpty());
    }
  }

  @Test
  void closedClientGivesClearError() {
    HoldfastClient c = client();
    c.health();
    c.close();
    HoldfastException.ClientClosed e =
        assertThrows(
            HoldfastException.ClientClosed.class,
            () -> c.hold(ns, partition, Target.seats("C1")).acquire());
    assertTrue(e.getMessage().contains("client is closed"), e.getMessage());
  }
}
