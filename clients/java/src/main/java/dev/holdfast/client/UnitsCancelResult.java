package dev.holdfast.client;

import java.util.List;

/**
 * The old name of a units Cancel's answer, kept for one release: {@link CancelResult} implements
 * it.
 *
 * @deprecated use {@link CancelResult}; removed in the next release
 */
@Deprecated
public interface UnitsCancelResult {
  int cancelled();

  boolean replayed();

  List<Units> units();
}
