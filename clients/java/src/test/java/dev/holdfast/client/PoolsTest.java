package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.holdfast.v1.Code;
import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import java.nio.file.Files;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Pools (docs/pools.md) against a {@link ScriptedPeer} that answers with the golden frames of
 * protos/testdata: every call sends what the golden request holds, and every answer maps to the
 * client's records and exceptions. The daemon's side is in {@link PoolsLiveTest}.
 */
class PoolsTest {
  private static final String NS = "ga";
  private static final String SHOW = "show-2026-12-24-2000";
  private static final String TOKEN = "1764412345678908.Zm9vYmFyYmF6cXV4MTIzNA";
  private static final List<Units> FAMILY = List.of(Units.of("adult", 2), Units.of("child", 1));

  static Request goldenRequest(String name) throws Exception {
    return Request.parseFrom(body(name));
  }

  static Response goldenResponse(String name) throws Exception {
    return Response.parseFrom(body(name));
  }

  private static byte[] body(String name) throws Exception {
    byte[] frame = Files.readAllBytes(RepoRoot.get().resolve("protos/testdata/" + name + ".bin"));
    return Arrays.copyOfRange(frame, Framing.HEADER_BYTES, frame.length);
  }

  /** Answers each method with the golden response named for it (the request's id put in). */
  private static final class Golden implements ScriptedPeer.Handler {
    final Map<Request.MethodCase, String> answers = new ConcurrentHashMap<>();
    final BlockingQueue<Request> requests = new ArrayBlockingQueue<>(64);

    @Override
    public void handle(ScriptedPeer p, java.nio.channels.SocketChannel c, Request req) {
      requests.add(req);
      try {
        Response r = goldenResponse(answers.get(req.getMethodCase()));
        p.send(
            c, r.toBuilder().setId(req.getId()).setCorrelationId(req.getCorrelationId()).build());
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }
  }

  @Test
  void unitsHoldRoundTripMatchesTheGoldenFrames() throws Exception {
    Golden g = new Golden();
    g.answers.put(Request.MethodCase.HOLD, "pool_hold_response_ok");
    g.answers.put(Request.MethodCase.EXTEND, "extend_response");
    g.answers.put(Request.MethodCase.STATUS, "pool_status_response");
    g.answers.put(Request.MethodCase.CONFIRM, "pool_confirm_response");
    g.answers.put(Request.MethodCase.RELEASE, "pool_release_response");
    try (ScriptedPeer peer = new ScriptedPeer(g);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      // A Map's units go out ordered by pool name, whatever its iteration order.
      Hold h =
          client
              .hold(NS, SHOW, Target.units(Map.of("child", 1, "adult", 2)))
              .ttl(Duration.ofMinutes(2))
              .options(CallOptions.timeout(Duration.ofMillis(1500)).withCorrelationId("ga-1"))
              .acquire();
      assertEquals(goldenRequest("pool_hold_request").getHold(), g.requests.take().getHold());
      assertEquals(TOKEN, h.token());
      assertEquals(1764412345678908L, h.fence());
      assertEquals(Duration.ofMinutes(2), h.ttl());
      assertEquals(Target.units(FAMILY), h.target());
      assertEquals(List.of("adult", "child"), h.target().pools());
      assertFalse(h.toString().contains("Zm9vYmFyYmF6cXV4MTIzNA"), h.toString());
      assertTrue(h.toString().contains("adult=2,child=1"), h.toString());

      h.extend(Duration.ofMinutes(5));
      assertEquals(goldenRequest("pool_extend_request").getExtend(), g.requests.take().getExtend());

      List<PoolStatus> st = h.status().pools();
      assertEquals(goldenRequest("pool_status_request").getStatus(), g.requests.take().getStatus());
      assertEquals(
          new PoolStatus("adult", 5000, 4990, 7, 3, 2, Duration.ofMillis(118250)), st.get(0));
      assertEquals(
          new PoolStatus("child", 500, 500, 1, 0, 1, Duration.ofMillis(118250)), st.get(1));

      ConfirmResult conf =
          h.confirm(
              new ConfirmOptions(
                  "order-4712:confirm",
                  "order-4712",
                  "{\"tickets\":3}".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
      assertEquals(
          goldenRequest("pool_confirm_request").getConfirm(), g.requests.take().getConfirm());
      assertEquals(1764412345678908L, conf.fence());
      assertEquals(FAMILY, conf.units());
      assertEquals(Instant.ofEpochMilli(1764412399456L), conf.confirmedAt());
      assertFalse(conf.replayed());
      h.close(); // confirmed: nothing is sent
      assertNull(g.requests.poll(100, TimeUnit.MILLISECONDS));

      try (Hold h2 = client.hold(NS, SHOW, Target.units(FAMILY)).acquire()) {
        g.requests.take();
        assertEquals(TOKEN, h2.token());
      }
      Request release = g.requests.take();
      assertEquals(goldenRequest("pool_release_request").getRelease(), release.getRelease());
      Hold h3 = client.hold(NS, SHOW, Target.units(FAMILY)).acquire();
      g.requests.take();
      assertEquals(3, h3.release());
    }
  }

  @Test
  void refusalsAreTypedNamingThePool() throws Exception {
    Golden g = new Golden();
    try (ScriptedPeer peer = new ScriptedPeer(g);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      g.answers.put(Request.MethodCase.HOLD, "pool_hold_response_held_by_another");
      HoldfastException.HeldByAnother busy =
          assertThrows(
              HoldfastException.HeldByAnother.class,
              () -> client.hold(NS, SHOW, Target.units(FAMILY)).acquire());
      assertEquals("adult", busy.getResourceId());
      assertFalse(busy.isRetryable());

      g.answers.put(Request.MethodCase.HOLD, "pool_hold_response_sold_out");
      HoldfastException.Confirmed soldOut =
          assertThrows(
              HoldfastException.Confirmed.class,
              () -> client.hold(NS, SHOW, Target.units(FAMILY)).acquire());
      assertEquals("child", soldOut.getResourceId());

      g.answers.put(Request.MethodCase.CONFIRM, "pool_confirm_response_sold_out");
      Hold h = client.resume(NS, SHOW, Target.units(FAMILY), TOKEN);
      HoldfastException.Conflict conflict =
          assertThrows(
              HoldfastException.Conflict.class, () -> h.confirm(ConfirmOptions.of("k", "r")));
      assertEquals("adult", conflict.getResourceId());

      g.answers.put(Request.MethodCase.SET_CAPACITY, "set_capacity_response_below_sold");
      HoldfastException below =
          assertThrows(
              HoldfastException.class, () -> client.admin().setCapacity(NS, SHOW, "adult", 4000));
      assertEquals(Code.CODE_FAILED_PRECONDITION, below.getCode());
      assertEquals("capacity", below.getField());
      assertEquals("adult", below.getResourceId());
      assertEquals("set_capacity", below.getOp());
    }
  }

  @Test
  void cancelAndCapacityMatchTheGoldenFrames() throws Exception {
    Golden g = new Golden();
    g.answers.put(Request.MethodCase.CANCEL, "pool_cancel_response");
    g.answers.put(Request.MethodCase.SET_CAPACITY, "set_capacity_response");
    g.answers.put(Request.MethodCase.GET_CAPACITY, "get_capacity_response");
    try (ScriptedPeer peer = new ScriptedPeer(g);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      CancelResult c =
          client.cancel(
              NS, SHOW, Target.units(Map.of("adult", 1)), "order-4712:refund-1", "order-4712");
      assertEquals(goldenRequest("pool_cancel_request").getCancel(), g.requests.take().getCancel());
      assertEquals(new CancelResult(1, false, List.of(Units.of("adult", 1))), c);

      PoolCapacity set = client.admin().setCapacity(NS, SHOW, "adult", 5000);
      assertEquals(
          goldenRequest("set_capacity_request").getSetCapacity(),
          g.requests.take().getSetCapacity());
      assertEquals(new PoolCapacity("adult", 5000, 4990, false), set);

      client.admin().setDefaultCapacity("coupon", "batch-7", 1);
      assertEquals(
          goldenRequest("set_capacity_default_request").getSetCapacity(),
          g.requests.take().getSetCapacity());

      Capacities caps = client.getCapacity(NS, SHOW, List.of("adult", "user-17"));
      assertEquals(
          goldenRequest("get_capacity_request").getGetCapacity(),
          g.requests.take().getGetCapacity());
      assertEquals(1, caps.defaultCapacity());
      assertEquals(
          List.of(
              new PoolCapacity("adult", 5000, 4990, false),
              new PoolCapacity("user-17", 1, 1, true)),
          caps.pools());
    }
  }
}
