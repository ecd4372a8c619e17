package dev.holdfast.client;

import java.util.List;

/**
 * The old name of GetCapacity's answer, kept for one release: {@link Capacities} implements it.
 *
 * @deprecated use {@link Capacities}; removed in the next release
 */
@Deprecated
public interface PoolCapacities {
  List<PoolCapacity> pools();

  long defaultCapacity();
}
