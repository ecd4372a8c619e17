package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.holdfast.v1.Code;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Pools against the real daemon (docs/pools.md): the test stack's {@code ga} namespace (kind
 * {@code pools}, confirmable; tools/devstack.sh adds it when PostgreSQL is there), a partition per
 * test.
 */
class PoolsLiveTest extends LiveTestBase {
  private static final String GA = "ga";
  private static final Duration TTL = Duration.ofSeconds(30);


  /** Sets the capacities; skips when the stack has no pools namespace (no PostgreSQL). */
  private void capacities(HoldfastClient c, long adult, long child) {
    try {
      c.admin().setCapacity(GA, partition, "adult", adult);
    } catch (HoldfastException e) {
      assumeTrue(e.getCode() != Code.CODE_NOT_FOUND, "no pools namespace 'ga': " + e.getMessage());
      throw e;
    }
    c.admin().setCapacity(GA, partition, "child", child);
  }

  private PoolStatus pool(HoldfastClient c, String pool) {
    return c.status(GA, partition, Target.units(pool)).pools().get(0);
  }

  @Test
  void capacityIsSetReadAndNeverBelowSold() {
    HoldfastClient c = client();
    capacities(c, 5, 2);
    PoolCapacity set = c.admin().setCapacity(GA, partition, "adult", 6);
    assertEquals(new PoolCapacity("adult", 6, 0, false), set);
    assertEquals(new PoolCapacity("", 1, 0, true), c.admin().setDefaultCapacity(GA, partition, 1));

    Capacities caps = c.getCapacity(GA, partition, List.of("adult", "child", "user-17"));
    assertEquals(1, caps.defaultCapacity());
    assertEquals(
        List.of(
            new PoolCapacity("adult", 6, 0, false),
            new PoolCapacity("child", 2, 0, false),
            new PoolCapacity("user-17", 1, 0, true)),
        caps.pools());

    try (Hold h = c.hold(GA, partition, Target.units(Map.of("adult", 4))).ttl(TTL).acquire()) {
      h.confirm(ConfirmOptions.of("cap-" + partition, "order-1"));
    }
    HoldfastException below =
        assertThrows(
            HoldfastException.class, () -> c.admin().setCapacity(GA, partition, "adult", 3));
    assertEquals(Code.CODE_FAILED_PRECONDITION, below.getCode());
    assertEquals("capacity", below.getField());
    assertEquals("adult", below.getResourceId());
    assertEquals(
        new PoolCapacity("adult", 4, 4, false), c.admin().setCapacity(GA, partition, "adult", 4));
  }

  @Test
  void allOrNothingSoldOutAndStatus() {
    HoldfastClient a = client();
    HoldfastClient b = client();
    capacities(a, 5, 2);
    List<Units> family = List.of(Units.of("adult", 2), Units.of("child", 1));
    try (Hold first = a.hold(GA, partition, Target.units(Map.of("adult", 4))).ttl(TTL).acquire()) {
      assertTrue(first.fence() != 0);
      assertFalse(first.toString().contains(first.token()));
      List<PoolStatus> mine = first.status().pools();
      assertEquals(1, mine.size());
      PoolStatus s = mine.get(0);
      assertEquals("adult", s.pool());
      assertEquals(
          List.of(5L, 0L, 4L, 1L, 4),
          List.of(s.capacity(), s.sold(), s.held(), s.free(), s.owned()));
      assertTrue(s.ttl().compareTo(Duration.ZERO) > 0 && s.ttl().compareTo(TTL) <= 0, s.toString());

      // 2 adults asked, 1 free: nothing is taken, not even the child.
      HoldfastException.HeldByAnother busy =
          assertThrows(
              HoldfastException.HeldByAnother.class,
              () -> b.hold(GA, partition, Target.units(family)).ttl(TTL).acquire());
      assertEquals("adult", busy.getResourceId());
      assertEquals(0, pool(b, "child").held());
      assertEquals(0, pool(b, "adult").owned(), "owned needs the token");

      first.confirm(ConfirmOptions.of("sold-" + partition, "order-1"));
    }
    PoolStatus adult = pool(b, "adult");
    assertEquals(List.of(4L, 0L, 1L), List.of(adult.sold(), adult.held(), adult.free()));
    // 2 asked, 1 left unsold: sold out, naming the pool; again nothing taken.
    HoldfastException.Confirmed soldOut =
        assertThrows(
            HoldfastException.Confirmed.class,
            () -> b.hold(GA, partition, Target.units(family)).ttl(TTL).acquire());
    assertEquals("adult", soldOut.getResourceId());
    assertEquals(0, pool(b, "child").held());

    // A hold that fits, extended and released; its units come back.
    Hold last =
        b.hold(GA, partition, Target.units(Map.of("adult", 1, "child", 2))).ttl(TTL).acquire();
    assertEquals(Duration.ofMinutes(1), last.extend(Duration.ofMinutes(1)));
    assertTrue(last.status().pools().get(1).ttl().compareTo(TTL) > 0);
    assertEquals(3, last.release());
    assertEquals(0, pool(b, "child").held());
    assertThrows(HoldfastException.NotHeld.class, () -> last.extend(TTL));
    last.close(); // released: nothing sent
  }

  @Test
  void confirmReplayAndCancel() {
    HoldfastClient c = client();
    capacities(c, 10, 5);
    List<Units> family = List.of(Units.of("adult", 2), Units.of("child", 1));
    String key = "order-" + partition + ":confirm";
    ConfirmOptions opts = new ConfirmOptions(key, "order-" + partition, new byte[] {1, 2, 3});
    ConfirmResult conf;
    Hold h = c.hold(GA, partition, Target.units(family)).ttl(TTL).acquire();
    try (h) {
      conf = h.confirm(opts);
    }
    assertEquals(h.fence(), conf.fence());
    assertEquals(family, conf.units());
    assertFalse(conf.replayed());
    assertTrue(conf.confirmedAt().toEpochMilli() > 0);

    // The answer was lost; the retry with the same key replays it and sells nothing more.
    ConfirmResult again = h.confirm(opts);
    assertTrue(again.replayed());
    assertEquals(conf.fence(), again.fence());
    assertEquals(2, pool(c, "adult").sold());

    // Confirm only what the token holds; a hold gone is HOLD_LOST.
    Hold gone = c.hold(GA, partition, Target.units(Map.of("adult", 1))).ttl(TTL).acquire();
    gone.release();
    assertThrows(
        HoldfastException.HoldLost.class,
        () -> gone.confirm(ConfirmOptions.of("lost-" + partition, "order-x")));

    // The customer returns one adult ticket.
    String refund = "order-" + partition + ":refund-1";
    CancelResult res =
        c.cancel(GA, partition, Target.units(Map.of("adult", 1)), refund, "order-" + partition);
    assertEquals(new CancelResult(1, false, List.of(Units.of("adult", 1))), res);
    assertTrue(
        c.cancel(GA, partition, Target.units(Map.of("adult", 1)), refund, "order-" + partition)
            .replayed());
    assertEquals(1, pool(c, "adult").sold());

    // More than is sold under the reference: NOT_FOUND naming the pool, nothing cancelled.
    HoldfastException nf =
        assertThrows(
            HoldfastException.class,
            () ->
                c.cancel(
                    GA,
                    partition,
                    Target.units(Map.of("adult", 1, "child", 2)),
                    "order-" + partition + ":refund-2",
                    "order-" + partition));
    assertEquals(Code.CODE_NOT_FOUND, nf.getCode());
    assertEquals("child", nf.getResourceId());
    assertEquals(1, pool(c, "adult").sold());
    assertEquals(1, pool(c, "child").sold());
    Capacities caps = c.getCapacity(GA, partition, List.of("adult", "child"));
    assertEquals(List.of(1L, 1L), caps.pools().stream().map(PoolCapacity::sold).toList());
  }
}
