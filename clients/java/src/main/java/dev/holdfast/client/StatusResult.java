package dev.holdfast.client;

import dev.holdfast.v1.StatusResponse;
import java.util.List;

/**
 * The answer of a Status: one entry per seat (per leg on a segment) or per pool, in the order
 * asked. Diagnostic only: it may be stale on arrival and grants nothing.
 *
 * @param resources seats: their state; empty for units
 * @param pools pools: capacity, sold, held, free units; empty for seats
 */
public record StatusResult(List<ResourceStatus> resources, List<PoolStatus> pools) {
  public StatusResult {
    resources = List.copyOf(resources);
    pools = List.copyOf(pools);
  }

  static StatusResult fromProto(StatusResponse s) {
    return new StatusResult(
        s.getResourcesList().stream().map(ResourceStatus::fromProto).toList(),
        s.getPoolsList().stream().map(PoolStatus::fromProto).toList());
  }
}
