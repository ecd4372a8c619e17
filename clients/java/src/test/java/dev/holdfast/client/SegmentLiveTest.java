package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.holdfast.v1.ResourceState;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Journey segments against the real daemon ({@code docs/segments.md}): the test stack's {@code
 * train} namespace (tools/devstack.sh) has {@code max_legs = 8}, so every request there names a
 * segment and acts on legs fromStop … toStop - 1; answers name a leg {@code "<id>@<leg>"}. Also:
 * strings holding a NUL byte are refused by the daemon ({@code INVALID_ARGUMENT} naming the field)
 * before anything is written; Java strings carry NUL freely and this client sends them as they are.
 */
class SegmentLiveTest extends LiveTestBase {
  private static final String TRAIN = "train";
  private static final String SEAT = "seat";
  private static final Duration TTL = Duration.ofSeconds(30);
  private static final ResourceState FREE = ResourceState.RESOURCE_STATE_FREE;
  private static final ResourceState HELD = ResourceState.RESOURCE_STATE_HELD;
  private static final ResourceState CONFIRMED = ResourceState.RESOURCE_STATE_CONFIRMED;


  private Map<String, ResourceState> legs(HoldfastClient c, String seat, int from, int to) {
    Map<String, ResourceState> out = new LinkedHashMap<>();
    for (ResourceStatus r :
        c.status(TRAIN, partition, Target.seats(seat).onSegment(from, to)).resources()) {
      out.put(r.id(), r.state());
    }
    return out;
  }

  private static List<String> claimed(ConfirmResult conf) {
    return conf.claims().stream().map(Claim::resourceId).sorted().toList();
  }

  private void buy(HoldfastClient c, String seat, Segment segment, String reference) {
    try (Hold h =
        c.hold(TRAIN, partition, Target.seats(seat).onSegment(segment)).ttl(TTL).acquire()) {
      h.confirm(ConfirmOptions.of(reference + "-" + partition, reference));
    }
  }

  // ---- journey segments --------------------------------------------------------------------

  @Test
  void adjacentSegmentsOfOneSeatSellToTwoTravellers() {
    HoldfastClient c = client();
    // Seoul (0) -> Daejeon (2) for Alice, Daejeon (2) -> Busan (4) for Bob.
    try (Hold alice =
            c.hold(TRAIN, partition, Target.seats("E7").onSegment(0, 2)).ttl(TTL).acquire();
        Hold bob =
            c.hold(TRAIN, partition, Target.seats("E7").onSegment(2, 4)).ttl(TTL).acquire()) {
      assertEquals(Segment.of(0, 2), alice.target().segment().orElseThrow());
      List<ResourceStatus> mine = alice.status().resources();
      assertEquals(List.of("E7@0", "E7@1"), mine.stream().map(ResourceStatus::id).toList());
      assertTrue(mine.stream().allMatch(ResourceStatus::owned), mine.toString());
      assertEquals(Duration.ofMinutes(1), alice.extend(Duration.ofMinutes(1)));
      ConfirmResult a = alice.confirm(ConfirmOptions.of("alice-" + partition, "order-a"));
      ConfirmResult b = bob.confirm(ConfirmOptions.of("bob-" + partition, "order-b"));
      assertEquals(List.of("E7@0", "E7@1"), claimed(a));
      assertEquals(List.of("E7@2", "E7@3"), claimed(b));
    }
    assertEquals(
        Map.of(
            "E7@0", CONFIRMED, "E7@1", CONFIRMED, "E7@2", CONFIRMED, "E7@3", CONFIRMED,
            "E7@4", FREE, "E7@5", FREE),
        legs(c, "E7", 0, 6));
  }

  @Test
  void anOverlappingHoldIsRefusedNamingTheLeg() {
    HoldfastClient c = client();
    HoldfastClient other = client();
    try (Hold carol =
        c.hold(TRAIN, partition, Target.seats("E7").onSegment(0, 2)).ttl(TTL).acquire()) {
      // 1 -> 3 shares leg 1 with Carol's hold.
      HoldfastException.HeldByAnother held =
          assertThrows(
              HoldfastException.HeldByAnother.class,
              () ->
                  other
                      .hold(TRAIN, partition, Target.seats("E7").onSegment(1, 3))
                      .ttl(TTL)
                      .acquire());
      assertEquals("E7@1", held.getResourceId());
      assertEquals(Map.of("E7@2", FREE), legs(c, "E7", 2, 3)); // all or nothing
      carol.confirm(ConfirmOptions.of("carol-" + partition, "order-c"));
    }
    HoldfastException.Confirmed sold =
        assertThrows(
            HoldfastException.Confirmed.class,
            () ->
                other
                    .hold(TRAIN, partition, Target.seats("E7").onSegment(1, 3))
                    .ttl(TTL)
                    .acquire());
    assertEquals("E7@1", sold.getResourceId());
    try (Hold dave =
        other.hold(TRAIN, partition, Target.seats("E7").onSegment(2, 3)).ttl(TTL).acquire()) {
      assertFalse(dave.token().isEmpty()); // the trip after hers is for sale
    }
  }

  @Test
  void aCancelFreesOnlyItsLegs() {
    HoldfastClient c = client();
    buy(c, "B2", Segment.of(0, 2), "order-1");
    buy(c, "B2", Segment.of(2, 4), "order-2");
    // The reference is the one the confirm was made with.
    CancelResult r =
        c.cancel(
            TRAIN, partition, Target.seats("B2").onSegment(0, 2), "refund-" + partition, "order-1");
    assertEquals(2, r.cancelled());
    assertFalse(r.replayed());
    assertEquals(
        Map.of("B2@0", FREE, "B2@1", FREE, "B2@2", CONFIRMED, "B2@3", CONFIRMED),
        legs(c, "B2", 0, 4));
    try (Hold again =
        c.hold(TRAIN, partition, Target.seats("B2").onSegment(0, 2)).ttl(TTL).acquire()) {
      assertFalse(again.token().isEmpty());
    }
    HoldfastException.Confirmed sold =
        assertThrows(
            HoldfastException.Confirmed.class,
            () -> c.hold(TRAIN, partition, Target.seats("B2").onSegment(1, 3)).ttl(TTL).acquire());
    assertEquals("B2@2", sold.getResourceId());
  }

  @Test
  void closeAndReleaseActOnTheHoldsLegs() {
    HoldfastClient c = client();
    try (Hold h =
        c.hold(TRAIN, partition, Target.seats("C3", "C4").onSegment(5, 8)).ttl(TTL).acquire()) {
      assertEquals(Segment.of(5, 8), h.target().segment().orElseThrow());
      assertEquals(
          Map.of("C4@4", FREE, "C4@5", HELD, "C4@6", HELD, "C4@7", HELD), legs(c, "C4", 4, 8));
    }
    for (String seat : List.of("C3", "C4")) {
      assertTrue(legs(c, seat, 5, 8).values().stream().allMatch(FREE::equals), seat);
    }
    Hold h2 = c.hold(TRAIN, partition, Target.seats("C3").onSegment(0, 3)).ttl(TTL).acquire();
    assertEquals(3, h2.release()); // one per leg
  }

  @Test
  void aSegmentIsRequiredWithLegsAndRefusedElsewhere() {
    HoldfastClient c = client();
    for (Runnable call :
        List.<Runnable>of(
            () -> c.hold(TRAIN, partition, Target.seats("E7")).ttl(TTL).acquire(),
            () -> c.hold(SEAT, partition, Target.seats("E7").onSegment(0, 1)).ttl(TTL).acquire(),
            () ->
                c.hold(TRAIN, partition, Target.seats("E7").onSegment(3, 2)).ttl(TTL).acquire())) {
      HoldfastException.InvalidArgument e =
          assertThrows(HoldfastException.InvalidArgument.class, call::run);
      assertEquals("segment", e.getField(), e.getMessage());
    }
  }

  // ---- strings with NUL bytes ----------------------------------------------------------------

  private ResourceState seatState(HoldfastClient c, String id) {
    List<ResourceStatus> st = c.status(SEAT, partition, Target.seats(id)).resources();
    assertEquals(1, st.size());
    assertEquals(id, st.get(0).id());
    return st.get(0).state();
  }

  @Test
  void aNulInAnIdIsRefusedAndTakesNothing() {
    HoldfastClient c = client();
    HoldfastException.InvalidArgument e =
        assertThrows(
            HoldfastException.InvalidArgument.class,
            () -> c.hold(SEAT, partition, Target.seats("E\u00007")).ttl(TTL).acquire());
    assertEquals("ids[0]", e.getField(), e.getMessage());
    e =
        assertThrows(
            HoldfastException.InvalidArgument.class,
            () -> c.hold(SEAT, partition, Target.seats("F1", "E\u00007")).ttl(TTL).acquire());
    assertEquals("ids[1]", e.getField(), e.getMessage());
    // Not cut at the NUL ("E"), and nothing else of the request taken.
    for (String id : List.of("E", "7", "F1")) {
      assertEquals(FREE, seatState(c, id), id);
    }
  }

  @Test
  void aNulInAnIdempotencyKeyIsRefused() {
    HoldfastClient c = client();
    String key = "order-" + partition;
    try (Hold h = c.hold(SEAT, partition, Target.seats("E")).ttl(TTL).acquire()) {
      HoldfastException.InvalidArgument e =
          assertThrows(
              HoldfastException.InvalidArgument.class,
              () -> h.confirm(ConfirmOptions.of(key + "\u0000x", "order-1")));
      assertEquals("idempotency_key", e.getField(), e.getMessage());
      // Nothing written: still held by this hold, not sold ...
      ResourceStatus st = h.status().resources().get(0);
      assertEquals(HELD, st.state());
      assertTrue(st.owned());
      // ... and the key cut at the NUL was never stored: a confirm under it is a first one.
      ConfirmResult conf = h.confirm(ConfirmOptions.of(key, "order-1"));
      assertFalse(conf.replayed());
      assertEquals(List.of("E"), claimed(conf));
    }
  }

  @Test
  void aNulInACancelReferenceIsRefused() {
    HoldfastClient c = client();
    try (Hold h = c.hold(SEAT, partition, Target.seats("E")).ttl(TTL).acquire()) {
      h.confirm(ConfirmOptions.of("order-" + partition, "order-1"));
    }
    String refund = "refund-" + partition;
    HoldfastException.InvalidArgument e =
        assertThrows(
            HoldfastException.InvalidArgument.class,
            () -> c.cancel(SEAT, partition, Target.seats("E"), refund, "order-1\u0000x"));
    assertEquals("reference", e.getField(), e.getMessage());
    assertEquals(CONFIRMED, seatState(c, "E"));
    // The refused cancel stored nothing under its key: the real one is not a replay.
    CancelResult r = c.cancel(SEAT, partition, Target.seats("E"), refund, "order-1");
    assertEquals(1, r.cancelled());
    assertFalse(r.replayed());
    assertEquals(FREE, seatState(c, "E"));
  }
}
