package dev.holdfast.client;

import java.time.Instant;
import java.util.List;

/**
 * The old name of a units Confirm's answer, kept for one release: {@link ConfirmResult} implements
 * it.
 *
 * @deprecated use {@link ConfirmResult}; removed in the next release
 */
@Deprecated
public interface UnitsConfirmation {
  long fence();

  List<Units> units();

  Instant confirmedAt();

  boolean replayed();
}
