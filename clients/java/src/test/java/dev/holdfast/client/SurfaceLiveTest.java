package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.holdfast.v1.Code;
import dev.holdfast.v1.ResourceState;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * One surface for every kind of target, against the real daemon: seats (namespace {@code seat}),
 * units of pools ({@code ga}) and seats on journey legs ({@code train}) go through the very same
 * calls, hold, extend, status, confirm (by a second client that resumed the hold from its token)
 * and cancel.
 */
class SurfaceLiveTest extends LiveTestBase {
  /** A kind of target, where it lives, and the names the daemon answers with. */
  record Kind(String name, String namespace, Target target, List<String> resourceIds) {
    @Override
    public String toString() {
      return name;
    }
  }

  static Stream<Kind> kinds() {
    return Stream.of(
        new Kind("seats", "seat", Target.seats("E7", "E8"), List.of("E7", "E8")),
        new Kind("units", "ga", Target.units(Map.of("adult", 2, "child", 1)), List.of()),
        new Kind("legs", "train", Target.seats("E7").onSegment(1, 3), List.of("E7@1", "E7@2")));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("kinds")
  void holdExtendStatusResumeConfirmCancel(Kind k) {
    HoldfastClient shop = client();
    HoldfastClient payments = client(); // another process, with only the token
    if (k.target().isUnits()) {
      capacities(shop, k.namespace());
    }
    String order = "order-" + partition;

    Hold h = shop.hold(k.namespace(), partition, k.target()).ttl(Duration.ofSeconds(30)).acquire();
    assertEquals(k.target(), h.target());
    assertEquals(Duration.ofMinutes(1), h.extend(Duration.ofMinutes(1)));
    assertOwned(k, h.status());

    Hold resumed = payments.resume(k.namespace(), partition, k.target(), h.token());
    assertOwned(k, resumed.status());
    ConfirmResult sold = confirm(resumed, ConfirmOptions.of(order + ":confirm", order));
    assertEquals(h.fence(), sold.fence());
    assertFalse(sold.replayed());
    assertTrue(sold.confirmedAt().toEpochMilli() > 0);
    if (k.target().isUnits()) {
      assertEquals(k.target().units(), sold.units());
      assertTrue(sold.claims().isEmpty());
    } else {
      assertEquals(
          k.resourceIds(), sold.claims().stream().map(Claim::resourceId).sorted().toList());
      assertTrue(sold.units().isEmpty());
    }
    assertTrue(resumed.confirm(ConfirmOptions.of(order + ":confirm", order)).replayed());
    h.close(); // sold through the other handle: the release finds nothing to give back, quietly

    StatusResult after = shop.status(k.namespace(), partition, k.target());
    if (k.target().isUnits()) {
      assertEquals(List.of(2L, 1L), after.pools().stream().map(PoolStatus::sold).toList());
    } else {
      assertEquals(k.resourceIds(), after.resources().stream().map(ResourceStatus::id).toList());
      assertTrue(
          after.resources().stream()
              .allMatch(r -> r.state() == ResourceState.RESOURCE_STATE_CONFIRMED),
          after.toString());
    }

    CancelResult back = shop.cancel(k.namespace(), partition, k.target(), order + ":refund", order);
    assertFalse(back.replayed());
    if (k.target().isUnits()) {
      assertEquals(3, back.cancelled());
      assertEquals(k.target().units(), back.units());
      assertEquals(
          List.of(0L, 0L),
          shop.status(k.namespace(), partition, k.target()).pools().stream()
              .map(PoolStatus::sold)
              .toList());
    } else {
      assertEquals(k.resourceIds().size(), back.cancelled());
      assertTrue(
          shop.status(k.namespace(), partition, k.target()).resources().stream()
              .allMatch(r -> r.state() == ResourceState.RESOURCE_STATE_FREE));
    }
  }

  /** Every seat (leg) of the target owned by the token, or every pool's units. */
  private static void assertOwned(Kind k, StatusResult st) {
    if (k.target().isUnits()) {
      assertEquals(
          k.target().units(),
          st.pools().stream().map(p -> Units.of(p.pool(), p.owned())).toList(),
          st.toString());
      assertTrue(st.resources().isEmpty());
    } else {
      assertEquals(k.resourceIds(), st.resources().stream().map(ResourceStatus::id).toList());
      assertTrue(st.resources().stream().allMatch(ResourceStatus::owned), st.toString());
      assertTrue(st.pools().isEmpty());
    }
  }

  /** Capacities for the pools; skips when the stack has no pools namespace (no PostgreSQL). */
  private void capacities(HoldfastClient c, String namespace) {
    try {
      c.admin().setCapacity(namespace, partition, "adult", 10);
    } catch (HoldfastException e) {
      assumeTrue(e.getCode() != Code.CODE_NOT_FOUND, "no pools namespace: " + e.getMessage());
      throw e;
    }
    c.admin().setCapacity(namespace, partition, "child", 10);
  }

  private static ConfirmResult confirm(Hold h, ConfirmOptions opts) {
    try {
      return h.confirm(opts);
    } catch (HoldfastException e) {
      assumeTrue(
          e.getCode() != Code.CODE_FAILED_PRECONDITION, "no PostgreSQL here: " + e.getMessage());
      throw e;
    }
  }
}
