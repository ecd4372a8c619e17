package dev.holdfast.client;

import java.util.ArrayList;
import java.util.List;

/**
 * A trip along a line of stops (journey segments, {@code docs/segments.md}): legs {@code fromStop}
 * … {@code toStop - 1}, leg k running from stop k to stop k + 1.
 *
 * <p>In a namespace with {@code max_legs > 0} every request names one, and answers name each leg
 * {@code "<id>@<leg>"} ({@code "E7@1"}); other namespaces refuse one. Where an API takes a {@code
 * Segment}, {@code null} means none, as before segments existed. Whether the trip goes forward and
 * fits {@code max_legs} is the daemon's to say ({@code INVALID_ARGUMENT}, field {@code segment}).
 *
 * <pre>{@code
 * try (Hold hold = client.hold("train", "KTX-101", List.of("E7"), Segment.of(0, 2), ttl)) {
 *   hold.confirm(ConfirmOptions.of("order-a:confirm", "order-a")); // claims E7@0, E7@1
 * }
 * }</pre>
 *
 * @param fromStop the stop the trip starts at (0 or more)
 * @param toStop the stop it ends at
 */
public record Segment(int fromStop, int toStop) {
  public Segment {
    if (fromStop < 0 || toStop < 0) {
      throw new IllegalArgumentException(
          "stops are numbered from 0: " + fromStop + " -> " + toStop);
    }
  }

  public static Segment of(int fromStop, int toStop) {
    return new Segment(fromStop, toStop);
  }

  /** The per-leg names the daemon answers with: {@code E7@0, E7@1, ...}. */
  public List<String> resourceIds(List<String> ids) {
    List<String> out = new ArrayList<>();
    for (String id : ids) {
      for (int leg = fromStop; leg < toStop; leg++) {
        out.add(id + "@" + leg);
      }
    }
    return List.copyOf(out);
  }

  dev.holdfast.v1.Segment toProto() {
    return dev.holdfast.v1.Segment.newBuilder().setFromStop(fromStop).setToStop(toStop).build();
  }
}
