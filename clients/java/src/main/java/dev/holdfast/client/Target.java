package dev.holdfast.client;

import dev.holdfast.v1.CancelRequest;
import dev.holdfast.v1.ConfirmRequest;
import dev.holdfast.v1.ExtendRequest;
import dev.holdfast.v1.HoldRequest;
import dev.holdfast.v1.ReleaseRequest;
import dev.holdfast.v1.StatusRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * What a call acts on: seats (ids of one partition, optionally on a journey {@link Segment}) or
 * units of pools (namespaces of kind {@code pools}, docs/pools.md). Every operation takes one, so a
 * seat hold and a units hold are the same call and the same {@link Hold}.
 *
 * <pre>{@code
 * Target.seats("E7", "E8")                       // seats
 * Target.seats("E7").onSegment(0, 2)             // legs 0 and 1 of E7 (docs/segments.md)
 * Target.units(Map.of("adult", 2, "child", 1))   // 2 adult + 1 child units
 * Target.units("adult", "child")                 // pools by name, for status
 * }</pre>
 *
 * <p>Immutable. The units of a {@code Map} are ordered by pool name, so a request does not depend
 * on the map's iteration order; {@link #units(Units...)} keeps the order given.
 */
public final class Target {
  private final List<String> ids; // seats; empty for units
  private final Segment segment; // seats only; null: none
  private final List<Units> units; // units; null for seats

  private Target(List<String> ids, Segment segment, List<Units> units) {
    this.ids = ids;
    this.segment = segment;
    this.units = units;
  }

  /** Seats (resource ids) of one partition. */
  public static Target seats(String... ids) {
    return seats(List.of(ids));
  }

  /** Seats (resource ids) of one partition. */
  public static Target seats(List<String> ids) {
    return new Target(List.copyOf(ids), null, null);
  }

  /** A count of units per pool, ordered by pool name. */
  public static Target units(Map<String, Integer> counts) {
    List<Units> out = new ArrayList<>(counts.size());
    for (String pool : new TreeSet<>(counts.keySet())) {
      out.add(Units.of(pool, counts.get(pool)));
    }
    return new Target(List.of(), null, List.copyOf(out));
  }

  /** Units of pools, in the order given. */
  public static Target units(Units... units) {
    return units(List.of(units));
  }

  /** Units of pools, in the order given. */
  public static Target units(List<Units> units) {
    return new Target(List.of(), null, List.copyOf(units));
  }

  /**
   * Pools by name without counts: enough for {@link HoldfastClient#status}, not for a hold, a
   * confirm or a cancel (the daemon refuses a count of 0).
   */
  public static Target units(String... pools) {
    List<Units> out = new ArrayList<>(pools.length);
    for (String p : pools) {
      out.add(Units.of(p, 0));
    }
    return new Target(List.of(), null, List.copyOf(out));
  }

  /** These seats on legs {@code fromStop} … {@code toStop - 1}; see {@link Segment}. */
  public Target onSegment(int fromStop, int toStop) {
    return onSegment(Segment.of(fromStop, toStop));
  }

  /** These seats on {@code segment} ({@code null}: none). Seats only: units have no legs. */
  public Target onSegment(Segment segment) {
    if (units != null) {
      throw new IllegalArgumentException("a segment applies to seats, not to units: " + this);
    }
    return new Target(ids, segment, null);
  }

  /** True for units of pools, false for seats. */
  public boolean isUnits() {
    return units != null;
  }

  /** The seat ids; empty for units. */
  public List<String> ids() {
    return ids;
  }

  /** The journey segment of seats; empty without one (and for units). */
  public Optional<Segment> segment() {
    return Optional.ofNullable(segment);
  }

  /** The units per pool; empty for seats. */
  public List<Units> units() {
    return units == null ? List.of() : units;
  }

  /** The pool names of units, in order; empty for seats. */
  public List<String> pools() {
    return Units.pools(units());
  }

  // ---- on the wire: the one place where seats and units differ ------------------------------

  void writeTo(HoldRequest.Builder b) {
    write(b::addAllIds, b::setSegment, () -> b.addAllUnits(Units.toProto(units)));
  }

  void writeTo(ExtendRequest.Builder b) {
    write(b::addAllIds, b::setSegment, () -> b.addAllPools(pools()));
  }

  void writeTo(ReleaseRequest.Builder b) {
    write(b::addAllIds, b::setSegment, () -> b.addAllPools(pools()));
  }

  void writeTo(ConfirmRequest.Builder b) {
    write(b::addAllIds, b::setSegment, () -> b.addAllUnits(Units.toProto(units)));
  }

  void writeTo(CancelRequest.Builder b) {
    write(b::addAllIds, b::setSegment, () -> b.addAllUnits(Units.toProto(units)));
  }

  void writeTo(StatusRequest.Builder b) {
    write(b::addAllIds, b::setSegment, () -> b.addAllPools(pools()));
  }

  /** The generated builders share no interface: each passes its own setters. */
  private void write(
      Consumer<List<String>> addIds,
      Consumer<dev.holdfast.v1.Segment> setSegment,
      Runnable addUnits) {
    if (isUnits()) {
      addUnits.run();
      return;
    }
    addIds.accept(ids);
    if (segment != null) {
      setSegment.accept(segment.toProto());
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Target t
        && ids.equals(t.ids)
        && Objects.equals(segment, t.segment)
        && Objects.equals(units, t.units);
  }

  @Override
  public int hashCode() {
    return Objects.hash(ids, segment, units);
  }

  /** {@code seats[E7, E8] segment=0->2} or {@code units[adult=2,child=1]}. */
  @Override
  public String toString() {
    if (!isUnits()) {
      return "seats"
          + ids
          + (segment != null ? " segment=" + segment.fromStop() + "->" + segment.toStop() : "");
    }
    StringBuilder b = new StringBuilder("units[");
    String sep = "";
    for (Units u : units) {
      b.append(sep).append(u.pool());
      if (u.count() != 0) {
        b.append('=').append(u.count());
      }
      sep = ",";
    }
    return b.append(']').toString();
  }
}
