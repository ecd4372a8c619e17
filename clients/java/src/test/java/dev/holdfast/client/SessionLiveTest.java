package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.holdfast.v1.ResourceState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Session holds against the real daemon (docs/sessions.md), in the test stack's {@code seat}
 * namespace, whose session TTL is the default 5 s (renewed every third of it).
 */
class SessionLiveTest extends LiveTestBase {
  private static final String SEAT = "seat";
  private static final ResourceState FREE = ResourceState.RESOURCE_STATE_FREE;
  private static final ResourceState HELD = ResourceState.RESOURCE_STATE_HELD;


  private List<ResourceState> states(HoldfastClient c, List<String> ids) {
    return c.status(SEAT, partition, Target.seats(ids)).resources().stream()
        .map(ResourceStatus::state)
        .toList();
  }

  @Test
  void idleSessionHoldIsRenewedPastThreeSessionTtls() throws Exception {
    HoldfastClient a = client();
    HoldfastClient b = client();
    try (Hold h = a.hold(SEAT, partition, Target.seats("E7", "E8")).session().acquire()) {
      assertTrue(h.session());
      Duration ttl = h.ttl();
      assertTrue(ttl.compareTo(Duration.ZERO) > 0, "the session TTL: " + ttl);
      Thread.sleep(ttl.multipliedBy(3).plusMillis(500).toMillis()); // a says nothing meanwhile

      assertTrue(h.lost().isEmpty(), () -> "lost: " + h.lost().get().getMessage());
      for (ResourceStatus r : h.status().resources()) {
        assertEquals(HELD, r.state(), r.toString());
        assertTrue(r.owned(), r.toString());
        assertTrue(r.ttl().compareTo(Duration.ZERO) > 0, r.toString());
      }
      assertInstanceOf(
          HoldfastException.HeldByAnother.class,
          assertThrowsHoldfast(() -> b.hold(SEAT, partition, Target.seats("E8")).acquire()));
    }
    assertEquals(List.of(FREE, FREE), states(b, List.of("E7", "E8")), "released on scope exit");
  }

  @Test
  void closingTheClientFreesItsSessionHoldsAtOnce() throws Exception {
    HoldfastClient a = client();
    HoldfastClient bystander = client();
    BlockingQueue<Hold> reported = new ArrayBlockingQueue<>(2);
    Hold h =
        a.hold(SEAT, partition, Target.seats("E7", "E8")).session().onLost(reported::add).acquire();
    Hold plain = a.hold(SEAT, partition, Target.seats("E9")).ttl(Duration.ofMinutes(1)).acquire();
    assertEquals(List.of(HELD, HELD, HELD), states(bystander, List.of("E7", "E8", "E9")));

    long closed = System.nanoTime();
    a.close();
    while (!states(bystander, List.of("E7", "E8")).equals(List.of(FREE, FREE))) {
      assertTrue(
          System.nanoTime() - closed < TimeUnit.SECONDS.toNanos(1),
          "session holds still held 1 s after the client closed");
      Thread.sleep(5);
    }
    long freedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - closed);
    assertTrue(freedMs < 1000, "freed after " + freedMs + " ms");
    // Far below the 5 s session TTL: released, not expired. The plain hold stays.
    assertEquals(List.of(HELD), states(bystander, List.of("E9")));

    assertSame(h, reported.poll(5, TimeUnit.SECONDS));
    assertInstanceOf(HoldfastException.Unavailable.class, h.lost().orElseThrow());
    assertTrue(plain.lost().isEmpty());
    h.close(); // a closed client: quiet
  }

  @Test
  void holdReleasedOrTakenElsewhereIsReportedLost() throws Exception {
    HoldfastClient a = client();
    HoldfastClient other = client();
    BlockingQueue<Hold> reported = new ArrayBlockingQueue<>(4);
    Hold released =
        a.hold(SEAT, partition, Target.seats("E7")).session().onLost(reported::add).acquire();
    Hold takenOver =
        a.hold(SEAT, partition, Target.seats("E8", "E9")).session().onLost(reported::add).acquire();
    Hold kept =
        a.hold(SEAT, partition, Target.seats("F1")).session().onLost(reported::add).acquire();

    // Another connection releases E7 with its token, and releases E8 then takes it for itself.
    assertEquals(1, other.resume(SEAT, partition, Target.seats("E7"), released.token()).release());
    assertEquals(1, other.resume(SEAT, partition, Target.seats("E8"), takenOver.token()).release());
    Hold thief =
        other.hold(SEAT, partition, Target.seats("E8")).ttl(Duration.ofMinutes(1)).acquire();

    // The next renewal (every third of the session TTL) finds them gone.
    long within = released.ttl().toMillis() + 2000;
    List<Hold> got = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      Hold h = reported.poll(within, TimeUnit.MILLISECONDS);
      assertTrue(h != null, "not reported within " + within + " ms: " + got);
      got.add(h);
    }
    assertTrue(got.contains(released) && got.contains(takenOver), got.toString());

    HoldfastException why = released.lost().orElseThrow();
    assertInstanceOf(HoldfastException.NotHeld.class, why);
    assertEquals("E7", why.getResourceId());
    HoldfastException taken = takenOver.lost().orElseThrow();
    assertInstanceOf(HoldfastException.HeldByAnother.class, taken);
    assertEquals("E8", taken.getResourceId());
    // All or nothing: what was still the token's (E9) was given back.
    assertEquals(List.of(HELD, FREE), states(other, List.of("E8", "E9")));
    assertTrue(thief.status().resources().get(0).owned(), "E8 is the other client's now");

    // The connection goes on, and so does the session hold nobody touched.
    assertTrue(a.health().live());
    assertTrue(kept.lost().isEmpty());
    assertTrue(kept.status().resources().get(0).owned());
    assertTrue(reported.isEmpty());

    released.close(); // NOT_HELD on scope exit: quiet
    takenOver.close(); // HELD_BY_ANOTHER: quiet
    assertEquals(List.of(HELD), states(other, List.of("E8")), "the thief's hold stays");
    assertEquals(1, kept.release());
  }

  @Test
  void confirmedSessionHoldLeavesTheSession() throws Exception {
    HoldfastClient a = client();
    try (Hold h = a.hold(SEAT, partition, Target.seats("E7")).session().acquire()) {
      ConfirmResult c;
      try {
        c = h.confirm(ConfirmOptions.of("order-" + partition, "customer-42"));
      } catch (HoldfastException e) {
        assumeTrue(
            e.getCode() != dev.holdfast.v1.Code.CODE_FAILED_PRECONDITION,
            "no PostgreSQL in this stack: " + e.getMessage());
        throw e;
      }
      assertEquals(h.fence(), c.fence());
      assertEquals(0, a.sessionHoldCount());
    }
    Thread.sleep(2500); // past a renewal: nothing is reported for a sold hold of ours
    assertTrue(a.health().live());
    assertEquals(
        List.of(ResourceState.RESOURCE_STATE_CONFIRMED), states(a, List.of("E7")));
  }

  private static HoldfastException assertThrowsHoldfast(Runnable r) {
    try {
      r.run();
    } catch (HoldfastException e) {
      return e;
    }
    throw new AssertionError("no HoldfastException");
  }
}
