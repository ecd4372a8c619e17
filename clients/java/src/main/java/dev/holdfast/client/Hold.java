package dev.holdfast.client;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * A granted hold on one or more resources of one partition.
 *
 * <p>Closing it releases it, so try-with-resources gives the resources back whatever happens in the
 * block; after a successful {@link #confirm} or {@link #release} closing does nothing. An expired,
 * taken-over or sold hold closes quietly (see {@link #close()}). The hold's token is a secret:
 * {@link #toString()} never shows it. A hold taken on a journey {@link Segment} keeps it: every
 * call through the hold, and closing it, acts on the same legs.
 *
 * <pre>{@code
 * try (Hold hold = client.hold("seat", run, List.of("E7", "E8", "E9"), Duration.ofMinutes(2))) {
 *   charge(customer);
 *   hold.confirm(ConfirmOptions.of(orderId, customerId));
 * } // released here if the charge failed
 * }</pre>
 *
 * <p>A <b>session hold</b> ({@link HoldfastClient#hold(String, String, List)} with {@link
 * HoldBuilder#session()}, docs/sessions.md) is bound to the client's connection: the daemon renews
 * it while the connection is open and releases it at once when the connection closes, so there is
 * no TTL to keep up with. When the daemon cannot keep it, or the connection ends, {@link #lost()}
 * says why and the builder's {@link HoldBuilder#onLost onLost} listener runs once.
 *
 * <pre>{@code
 * try (Hold hold = client.hold("seat", run, List.of("E7")).session().acquire()) {
 *   charge(customer);                                  // as long as it takes
 *   hold.confirm(ConfirmOptions.of(orderId, customerId));
 * }
 * }</pre>
 */
public final class Hold implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger("dev.holdfast.client");

  private final HoldfastClient client;
  private final String namespace;
  private final String partition;
  private final List<String> ids;
  private final Segment segment; // null: none
  private final String token;
  private final long fence;
  private final Duration ttl;
  private final boolean degraded;
  private final AtomicBoolean finished = new AtomicBoolean();
  private volatile SessionHolds sessions; // the connection's, for a session hold; else null
  private volatile Consumer<Hold> onLost;
  private final AtomicReference<HoldfastException> lost = new AtomicReference<>();

  Hold(
      HoldfastClient client,
      String namespace,
      String partition,
      List<String> ids,
      Segment segment,
      String token,
      long fence,
      Duration ttl,
      boolean degraded) {
    this.client = client;
    this.namespace = namespace;
    this.partition = partition;
    this.ids = ids;
    this.segment = segment;
    this.token = token;
    this.fence = fence;
    this.ttl = ttl;
    this.degraded = degraded;
  }

  public String namespace() {
    return namespace;
  }

  public String partition() {
    return partition;
  }

  public List<String> ids() {
    return ids;
  }

  /** The journey segment this hold covers; empty outside namespaces with legs. */
  public Optional<Segment> segment() {
    return Optional.ofNullable(segment);
  }

  /**
   * The fencing number of this hold: it rises with every grant in the partition, so a store can
   * refuse writes from an older holder. Unsigned; see {@link Long#toUnsignedString(long)}.
   */
  public long fence() {
    return fence;
  }

  /** The TTL applied at grant (zero for a {@linkplain HoldfastClient#resume resumed} hold). */
  public Duration ttl() {
    return ttl;
  }

  /**
   * True when the namespace's best_effort policy answered without Redis: nothing is actually held.
   * Never set for fail_closed namespaces.
   */
  public boolean degraded() {
    return degraded;
  }

  /** True for a session hold: bound to the connection that took it (docs/sessions.md). */
  public boolean session() {
    return sessions != null;
  }

  /**
   * Why a session hold is no longer held, once the daemon reported it lost or its connection
   * ended; empty while it is held (and always for a plain hold, whose loss shows at the next
   * call). The exception is the one for the reason's code: {@link HoldfastException.NotHeld}
   * (expired or deleted, e.g. released with its token elsewhere), {@link
   * HoldfastException.HeldByAnother} or {@link HoldfastException.Confirmed} naming the resource
   * ({@code getResourceId()}), or {@link HoldfastException.Unavailable} when the connection ended
   * (the daemon released the hold, or it expires with its session TTL). A lost hold is gone: take a
   * new one.
   */
  public Optional<HoldfastException> lost() {
    return Optional.ofNullable(lost.get());
  }

  /** Joins the connection's session holds; the listener runs once if the hold is lost. */
  void bindSession(SessionHolds holds, Consumer<Hold> listener) {
    this.onLost = listener;
    this.sessions = holds;
    holds.register(this);
  }

  /**
   * The daemon reported this session hold lost, or its connection ended: record why (once) and run
   * the listener on the client's callback executor. A hold already released or confirmed through
   * this object needs no news.
   */
  void sessionLost(HoldfastException why) {
    if (finished.get() || !lost.compareAndSet(null, why)) {
      return;
    }
    Consumer<Hold> listener = onLost;
    if (listener == null) {
      return;
    }
    client.runCallback(
        () -> {
          try {
            listener.accept(this);
          } catch (RuntimeException e) {
            LOG.log(
                System.Logger.Level.WARNING, "holdfast: onLost listener of " + this + " failed", e);
          }
        });
  }

  private void leaveSession() {
    SessionHolds s = sessions;
    if (s != null) {
      s.forget(this);
    }
  }

  /**
   * The secret proof of ownership, for handing the hold to another process ({@link
   * HoldfastClient#resume}). Keep it out of logs, URLs and error messages.
   */
  public String token() {
    return token;
  }

  public CompletableFuture<Duration> extendAsync(Duration ttl, CallOptions opts) {
    return client.extendAsync(this, ttl, opts);
  }

  /** Sets the remaining TTL to {@code ttl} from now and returns the TTL applied. */
  public Duration extend(Duration ttl) {
    return HoldfastClient.await(() -> extendAsync(ttl, null));
  }

  public Duration extend(Duration ttl, CallOptions opts) {
    return HoldfastClient.await(() -> extendAsync(ttl, opts));
  }

  public CompletableFuture<Integer> releaseAsync(CallOptions opts) {
    return client.releaseAsync(this, opts).thenApply(this::markFinished);
  }

  /** Releases the hold; returns how many resources were released. */
  public int release() {
    return HoldfastClient.await(() -> releaseAsync(null));
  }

  public CompletableFuture<Confirmation> confirmAsync(ConfirmOptions confirm, CallOptions opts) {
    return client.confirmAsync(this, confirm, opts).thenApply(this::markFinished);
  }

  /** See {@link HoldfastClient#confirmAsync}. */
  public Confirmation confirm(ConfirmOptions confirm) {
    return HoldfastClient.await(() -> confirmAsync(confirm, null));
  }

  public Confirmation confirm(ConfirmOptions confirm, CallOptions opts) {
    return HoldfastClient.await(() -> confirmAsync(confirm, opts));
  }

  /** This hold's resources, with {@code owned} set where this token still holds them. */
  public List<ResourceStatus> status() {
    return HoldfastClient.await(
        () -> client.statusAsync(namespace, partition, ids, token, segment, null));
  }

  /**
   * Leaves the hold's scope, the same way in every holdfast client: releases the hold unless it was
   * released or confirmed through this object (also after a failed confirm). A hold that expired
   * ({@code NOT_HELD}), was taken over since ({@code HELD_BY_ANOTHER}) or was sold ({@code
   * CONFIRMED}), and a closed client, are not errors here: nothing is ours to give back. Other
   * failures are thrown (the hold then expires with its TTL); in try-with-resources they are added
   * to the block's own exception as suppressed.
   */
  @Override
  public void close() {
    if (finished.get()) {
      return;
    }
    try {
      release();
    } catch (HoldfastException.NotHeld
        | HoldfastException.HeldByAnother
        | HoldfastException.Confirmed
        | HoldfastException.ClientClosed e) {
      finished.set(true);
      leaveSession();
    }
  }

  private <T> T markFinished(T value) {
    finished.set(true);
    leaveSession();
    return value;
  }

  /** Describes the hold without its token. */
  @Override
  public String toString() {
    return "Hold{"
        + namespace
        + "/"
        + partition
        + ids
        + (segment != null ? " segment=" + segment.fromStop() + "->" + segment.toStop() : "")
        + " fence="
        + Long.toUnsignedString(fence)
        + " ttl="
        + ttl
        + (degraded ? " degraded" : "")
        + (sessions != null ? " session" : "")
        + (lost.get() != null ? " lost=" + lost.get().getCodeName() : "")
        + "}";
  }
}
