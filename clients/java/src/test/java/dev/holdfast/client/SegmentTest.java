package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.holdfast.v1.CancelResponse;
import dev.holdfast.v1.Code;
import dev.holdfast.v1.ConfirmResponse;
import dev.holdfast.v1.ExtendResponse;
import dev.holdfast.v1.HoldResponse;
import dev.holdfast.v1.ReleaseResponse;
import dev.holdfast.v1.Response;
import dev.holdfast.v1.StatusResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * Journey segments on the wire, against the scripted peer: every call carries the segment it was
 * given, a {@link Hold} carries its own to extend, release, confirm, status and close, and calls
 * without one leave the field unset. The daemon's side is in {@link SegmentLiveTest}.
 */
class SegmentTest {
  /** Answers every call with OK and records "method from->to" (or "method -"). */
  private static ScriptedPeer recordingPeer(List<String> seen) throws Exception {
    return new ScriptedPeer(
        (p, c, req) -> {
          Response.Builder r = Response.newBuilder().setId(req.getId()).setCode(Code.CODE_OK);
          String method;
          dev.holdfast.v1.Segment seg = null;
          switch (req.getMethodCase()) {
            case HOLD -> {
              method = "hold";
              seg = req.getHold().hasSegment() ? req.getHold().getSegment() : null;
              r.setHold(HoldResponse.newBuilder().setToken("1.fake").setFence(1).setTtlMs(60000));
            }
            case EXTEND -> {
              method = "extend";
              seg = req.getExtend().hasSegment() ? req.getExtend().getSegment() : null;
              r.setExtend(ExtendResponse.newBuilder().setTtlMs(1000));
            }
            case RELEASE -> {
              method = "release";
              seg = req.getRelease().hasSegment() ? req.getRelease().getSegment() : null;
              r.setRelease(ReleaseResponse.newBuilder().setReleased(1));
            }
            case CONFIRM -> {
              method = "confirm";
              seg = req.getConfirm().hasSegment() ? req.getConfirm().getSegment() : null;
              r.setConfirm(ConfirmResponse.newBuilder().setFence(1));
            }
            case CANCEL -> {
              method = "cancel";
              seg = req.getCancel().hasSegment() ? req.getCancel().getSegment() : null;
              r.setCancel(CancelResponse.newBuilder().setCancelled(1));
            }
            case STATUS -> {
              method = "status";
              seg = req.getStatus().hasSegment() ? req.getStatus().getSegment() : null;
              r.setStatus(StatusResponse.getDefaultInstance());
            }
            default -> method = req.getMethodCase().toString();
          }
          seen.add(
              seg == null
                  ? method + " -"
                  : method + " " + seg.getFromStop() + "->" + seg.getToStop());
          p.send(c, r.build());
        });
  }

  @Test
  void aHoldCarriesItsSegmentToEveryCall() throws Exception {
    List<String> seen = new CopyOnWriteArrayList<>();
    try (ScriptedPeer peer = recordingPeer(seen);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      try (Hold h = client.hold("train", "ktx", Target.seats("E7").onSegment(0, 2)).acquire()) {
        assertEquals(Segment.of(0, 2), h.target().segment().orElseThrow());
        assertTrue(h.toString().contains("segment=0->2"), h.toString());
        assertFalse(h.toString().contains("1.fake"));
        h.extend(Duration.ofSeconds(1));
        h.status();
      } // close: release on the same legs
      Hold h2 = client.hold("train", "ktx", Target.seats("E7").onSegment(2, 4)).acquire();
      h2.confirm(ConfirmOptions.of("k-1", "order-1"));
      client.cancel("train", "ktx", Target.seats("E7").onSegment(2, 4), "r-1", "order-1");
      client.status("train", "ktx", Target.seats("E7").onSegment(0, 4)).resources();
      client.resume("train", "ktx", Target.seats("E7").onSegment(5, 6), "1.fake").release();
      client
          .hold("train", "ktx", Target.seats("E8").onSegment(6, 7))
          .acquireAsync()
          .join()
          .release();
    }
    assertEquals(
        List.of(
            "hold 0->2", "extend 0->2", "status 0->2", "release 0->2",
            "hold 2->4", "confirm 2->4", "cancel 2->4", "status 0->4",
            "release 5->6", "hold 6->7", "release 6->7"),
        seen);
  }

  @Test
  void noSegmentLeavesTheFieldUnset() throws Exception {
    List<String> seen = new CopyOnWriteArrayList<>();
    try (ScriptedPeer peer = recordingPeer(seen);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      try (Hold h =
          client.hold("seat", "run-1", Target.seats("E7")).ttl(Duration.ofMinutes(1)).acquire()) {
        assertTrue(h.target().segment().isEmpty());
        assertFalse(h.toString().contains("segment"));
        h.extend(Duration.ofSeconds(1));
        h.confirm(ConfirmOptions.of("k-2", "k-2"));
      }
      client.cancel("seat", "run-1", Target.seats("E7"), "r-2", "k-2");
      client.status("seat", "run-1", Target.seats("E7")).resources();
    }
    assertEquals(List.of("hold -", "extend -", "confirm -", "cancel -", "status -"), seen);
  }

  @Test
  void segmentValues() {
    assertEquals(
        List.of("E7@1", "E7@2", "E8@1", "E8@2"), Segment.of(1, 3).resourceIds(List.of("E7", "E8")));
    assertThrows(IllegalArgumentException.class, () -> Segment.of(-1, 2));
    assertEquals(new Segment(0, 2), Segment.of(0, 2));
  }
}
