package dev.holdfast.client;

import dev.holdfast.v1.Code;
import dev.holdfast.v1.SessionEvent;
import dev.holdfast.v1.SessionHoldLost;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The session holds taken on one connection (docs/sessions.md), by namespace, partition and fence,
 * so that the daemon's session events and the connection's end reach the {@link Hold} objects.
 *
 * <p>The reader thread may read an event before the caller has the answer that granted the hold;
 * such a report is kept (at most {@link #EARLY_MAX}, oldest dropped first) until the hold
 * registers.
 * A hold that registers after the connection ended is lost at once. Thread-safe.
 */
final class SessionHolds {
  static final int EARLY_MAX = 1024;

  record Key(String namespace, String partition, long fence) {}

  private final Map<Key, Hold> holds = new HashMap<>(); // guarded by this
  private final LinkedHashMap<Key, HoldfastException> early = // guarded by this
      new LinkedHashMap<>() {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<Key, HoldfastException> eldest) {
          return size() > EARLY_MAX;
        }
      };
  private HoldfastException ended; // guarded by this
  /** holds.size(), readable without the lock (the connection asks on every frame it reads). */
  private volatile int count;
  /** Run after a hold registers: the connection keeps a reader while session holds exist. */
  private final Runnable onRegistered;

  SessionHolds() {
    this(() -> {});
  }

  SessionHolds(Runnable onRegistered) {
    this.onRegistered = onRegistered;
  }

  /** Whether no session hold is registered. */
  boolean isEmpty() {
    return count == 0;
  }

  private static Key key(Hold h) {
    return new Key(h.namespace(), h.partition(), h.fence());
  }

  /** Adds {@code hold}; reports it lost at once when its loss was already read. */
  void register(Hold hold) {
    Key k = key(hold);
    HoldfastException lost;
    synchronized (this) {
      lost = early.remove(k);
      if (lost == null) {
        lost = ended;
      }
      if (lost == null) {
        holds.put(k, hold);
        count = holds.size();
      }
    }
    if (lost != null) {
      hold.sessionLost(lost);
    } else {
      onRegistered.run();
    }
  }

  /** Removes {@code hold} (released or confirmed through it): it needs no more news. */
  void forget(Hold hold) {
    synchronized (this) {
      holds.remove(key(hold), hold);
      count = holds.size();
    }
  }

  /** How many session holds are registered (tests). */
  synchronized int size() {
    return holds.size();
  }

  /** A session event: each hold it names has left the session. */
  void onEvent(SessionEvent event) {
    List<Hold> found = new ArrayList<>();
    List<HoldfastException> why = new ArrayList<>();
    synchronized (this) {
      for (SessionHoldLost lost : event.getLostList()) {
        Key k = new Key(lost.getNamespace(), lost.getPartition(), lost.getFence());
        HoldfastException e = lostError(lost);
        Hold h = holds.remove(k);
        if (h != null) {
          found.add(h);
          why.add(e);
        } else {
          early.put(k, e);
        }
      }
      count = holds.size();
    }
    for (int i = 0; i < found.size(); i++) {
      found.get(i).sessionLost(why.get(i));
    }
  }

  /**
   * The connection ended: the daemon released its session holds at once (or, if the daemon died,
   * they expire with their session TTL). Every hold taken on it, and any that registers later, is
   * lost with {@code UNAVAILABLE}.
   */
  void connectionEnded(Throwable cause) {
    HoldfastException e =
        HoldfastException.of(
            Code.CODE_UNAVAILABLE,
            "session",
            "session hold lost: its connection to holdfastd ended ("
                + (cause == null ? "closed" : cause.getMessage())
                + ")",
            "",
            null);
    List<Hold> all;
    synchronized (this) {
      if (ended == null) {
        ended = e;
      }
      all = new ArrayList<>(holds.values());
      holds.clear();
      count = 0;
      early.clear();
    }
    for (Hold h : all) {
      h.sessionLost(e);
    }
  }

  /** The reason as this client's exception for that code, naming the resource. */
  static HoldfastException lostError(SessionHoldLost lost) {
    String message = "session hold lost: " + lost.getMessage();
    Code reason = lost.getReason();
    if (reason == Code.UNRECOGNIZED) { // a newer daemon's reason: keep its number
      return new HoldfastException(
          reason,
          lost.getReasonValue(),
          "session",
          message,
          "",
          lost.getResourceId(),
          "",
          false,
          null);
    }
    if (reason == Code.CODE_UNSPECIFIED || reason == Code.CODE_OK) {
      reason = Code.CODE_NOT_HELD; // lost without a reason: it is not held any more
    }
    return HoldfastException.of(
        reason, "session", message, "", lost.getResourceId(), "", false, null);
  }
}
