package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.holdfast.v1.CancelResponse;
import dev.holdfast.v1.Code;
import dev.holdfast.v1.ConfirmResponse;
import dev.holdfast.v1.ExtendResponse;
import dev.holdfast.v1.GetCapacityResponse;
import dev.holdfast.v1.HoldResponse;
import dev.holdfast.v1.PoolTake;
import dev.holdfast.v1.ReleaseResponse;
import dev.holdfast.v1.Request;
import dev.holdfast.v1.ResourceState;
import dev.holdfast.v1.Response;
import dev.holdfast.v1.SetCapacityResponse;
import dev.holdfast.v1.StatusResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * The names kept for one release (protos/contract/surface/java.json, "deprecated") still work, with
 * their old types, and put on the wire exactly what the calls they became put there.
 */
@SuppressWarnings("deprecation") // the point of the test
class DeprecatedAliasesTest {
  private static final Duration TTL = Duration.ofMinutes(1);
  private static final CallOptions OPTS = CallOptions.defaults().withCorrelationId("alias-1");
  private static final String TOKEN = "1.fake";

  /** Answers every call with OK and a plausible result; records each request without its ids. */
  private static ScriptedPeer peer(List<Request> seen) throws Exception {
    return new ScriptedPeer(
        (p, c, req) -> {
          seen.add(req.toBuilder().clearId().clearTimeoutMs().clearTraceparent().build());
          Response.Builder r = Response.newBuilder().setId(req.getId()).setCode(Code.CODE_OK);
          switch (req.getMethodCase()) {
            case HOLD ->
                r.setHold(HoldResponse.newBuilder().setToken(TOKEN).setFence(7).setTtlMs(60000));
            case EXTEND -> r.setExtend(ExtendResponse.newBuilder().setTtlMs(60000));
            case RELEASE -> r.setRelease(ReleaseResponse.newBuilder().setReleased(1));
            case CONFIRM -> {
              ConfirmResponse.Builder cr = ConfirmResponse.newBuilder().setFence(7);
              cr.addAllUnits(req.getConfirm().getUnitsList());
              for (String id : req.getConfirm().getIdsList()) {
                cr.addClaims(
                    dev.holdfast.v1.Claim.newBuilder()
                        .setResourceId(id)
                        .setFence(7)
                        .setConfirmedAtUnixMs(1000));
              }
              r.setConfirm(cr);
            }
            case CANCEL ->
                r.setCancel(
                    CancelResponse.newBuilder()
                        .setCancelled(1)
                        .addAllUnits(req.getCancel().getUnitsList()));
            case STATUS -> {
              StatusResponse.Builder s = StatusResponse.newBuilder();
              for (String id : req.getStatus().getIdsList()) {
                s.addResourcesBuilder().setId(id).setState(ResourceState.RESOURCE_STATE_FREE);
              }
              for (String pool : req.getStatus().getPoolsList()) {
                s.addPoolsBuilder().setPool(pool).setCapacity(10).setFree(10);
              }
              r.setStatus(s);
            }
            case SET_CAPACITY ->
                r.setSetCapacity(
                    SetCapacityResponse.newBuilder()
                        .setPool(
                            dev.holdfast.v1.PoolCapacity.newBuilder()
                                .setPool(req.getSetCapacity().getPool())
                                .setCapacity(req.getSetCapacity().getCapacity())));
            case GET_CAPACITY ->
                r.setGetCapacity(GetCapacityResponse.newBuilder().setDefaultCapacity(1));
            default -> {}
          }
          p.send(c, r.build());
        });
  }

  /** The requests {@code calls} make, without the fields that differ per call (ids, deadline). */
  private static List<Request> sent(Consumer<HoldfastClient> calls) throws Exception {
    List<Request> seen = new CopyOnWriteArrayList<>();
    try (ScriptedPeer peer = peer(seen);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      calls.accept(client);
    }
    return List.copyOf(seen);
  }

  @Test
  void seatCallsUnderTheirOldNames() throws Exception {
    Segment legs = Segment.of(0, 2);
    List<Request> old =
        sent(
            c -> {
              Hold h = c.hold("seat", "run-1", List.of("E7", "E8"), TTL, OPTS);
              assertEquals(List.of("E7", "E8"), h.ids());
              assertTrue(h.segment().isEmpty());
              assertEquals(TTL, c.extend(h, TTL));
              Confirmation conf = c.confirm(h, ConfirmOptions.of("k-1", "order-1"));
              for (Confirmation.Claim claim : conf.claims()) {
                assertEquals(7, claim.fence());
              }
              assertEquals(2, conf.claims().size());
              CancelResult cancelled = c.cancel("seat", "run-1", List.of("E7"), "r-1", "order-1");
              assertEquals(1, cancelled.cancelled());
              List<ResourceStatus> st = c.status("seat", "run-1", List.of("E7"));
              assertEquals(ResourceState.RESOURCE_STATE_FREE, st.get(0).state());

              Hold trip = c.holdAsync("train", "ktx", List.of("E7"), legs, TTL, null).join();
              assertEquals(legs, trip.segment().orElseThrow());
              assertEquals(1, c.release(trip));
              c.hold("train", "ktx", List.of("E7")).segment(legs).acquire().close();
              c.resume("train", "ktx", List.of("E7"), legs, TOKEN).release();
              c.cancel("train", "ktx", List.of("E7"), legs, "r-2", "order-2");
              c.status("train", "ktx", List.of("E7"), legs, OPTS);
            });
    Target seats = Target.seats("E7", "E8");
    Target trip = Target.seats("E7").onSegment(0, 2);
    List<Request> now =
        sent(
            c -> {
              Hold h = c.hold("seat", "run-1", seats).ttl(TTL).options(OPTS).acquire();
              h.extend(TTL);
              h.confirm(ConfirmOptions.of("k-1", "order-1"));
              c.cancel("seat", "run-1", Target.seats("E7"), "r-1", "order-1");
              c.status("seat", "run-1", Target.seats("E7"));

              c.hold("train", "ktx", trip).ttl(TTL).acquireAsync().join().release();
              c.hold("train", "ktx", trip).acquire().close();
              c.resume("train", "ktx", trip, TOKEN).release();
              c.cancel("train", "ktx", trip, "r-2", "order-2");
              c.status("train", "ktx", trip, OPTS);
            });
    assertEquals(withoutCorrelationIds(now), withoutCorrelationIds(old));
    assertEquals("alias-1", old.get(0).getCorrelationId());
  }

  @Test
  void unitCallsUnderTheirOldNames() throws Exception {
    List<Units> family = List.of(Units.of("adult", 2), Units.of("child", 1));
    List<Request> old =
        sent(
            c -> {
              PoolCapacity cap = c.setCapacity("ga", "show-1", "adult", 5000);
              assertEquals(new PoolCapacity("adult", 5000, 0, false), cap);
              c.setDefaultCapacity("ga", "show-1", 1, OPTS);
              PoolCapacities caps = c.getCapacity("ga", "show-1", List.of("adult"));
              assertEquals(1, caps.defaultCapacity());

              try (UnitsHold h = c.holdUnits("ga", "show-1", family, TTL)) {
                assertEquals(family, h.units());
                assertEquals(List.of("adult", "child"), h.pools());
                assertEquals(TTL, h.extend(TTL));
                List<PoolStatus> pools = h.status();
                assertEquals(
                    List.of("adult", "child"), pools.stream().map(PoolStatus::pool).toList());
                UnitsConfirmation sold = h.confirm(ConfirmOptions.of("k-3", "order-3"));
                assertEquals(family, sold.units());
                assertFalse(sold.replayed());
              } // confirmed: no release
              UnitsCancelResult back =
                  c.cancelUnits("ga", "show-1", List.of(Units.of("adult", 1)), "r-3", "order-3");
              assertEquals(List.of(Units.of("adult", 1)), back.units());
              assertEquals(10, c.poolStatus("ga", "show-1", List.of("child")).get(0).capacity());
              assertEquals(1, c.resumeUnits("ga", "show-1", family, TOKEN).release());
              c.holdUnitsAsync("ga", "show-1", family, null, null).join().close();
            });
    Target units = Target.units(Map.of("adult", 2, "child", 1));
    List<Request> now =
        sent(
            c -> {
              c.admin().setCapacity("ga", "show-1", "adult", 5000);
              c.admin().setDefaultCapacity("ga", "show-1", 1, OPTS);
              c.getCapacity("ga", "show-1", List.of("adult"));

              try (Hold h = c.hold("ga", "show-1", units).ttl(TTL).acquire()) {
                h.extend(TTL);
                h.status();
                h.confirm(ConfirmOptions.of("k-3", "order-3"));
              }
              c.cancel("ga", "show-1", Target.units(Map.of("adult", 1)), "r-3", "order-3");
              c.status("ga", "show-1", Target.units("child"));
              c.resume("ga", "show-1", units, TOKEN).release();
              c.hold("ga", "show-1", units).acquireAsync().join().close();
            });
    assertEquals(withoutCorrelationIds(now), withoutCorrelationIds(old));
    assertEquals(
        List.of(
            PoolTake.newBuilder().setPool("adult").setCount(2).build(),
            PoolTake.newBuilder().setPool("child").setCount(1).build()),
        old.get(3).getHold().getUnitsList());
  }

  private static List<Request> withoutCorrelationIds(List<Request> requests) {
    return requests.stream().map(r -> r.toBuilder().clearCorrelationId().build()).toList();
  }
}
