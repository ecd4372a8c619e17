package dev.holdfast.client;

import dev.holdfast.v1.ExtendRequest;
import dev.holdfast.v1.ReleaseRequest;
import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * A granted hold on a {@link Target} of one partition: seats (on a journey segment or not) or units
 * of pools. The one handle for every kind: {@link HoldfastClient#hold} takes one, {@link
 * HoldfastClient#resume} rebuilds one from a token received elsewhere.
 *
 * <p>Closing it releases it, so try-with-resources gives the resources back whatever happens in the
 * block; after a successful {@link #confirm} or {@link #release} closing does nothing. An expired,
 * taken-over or sold hold closes quietly (see {@link #close()}). Every call through the hold, and
 * closing it, acts on its target (the same legs, the same units). The token is a secret: {@link
 * #toString()} never shows it.
 *
 * <pre>{@code
 * try (Hold hold = client.hold("seat", run, Target.seats("E7", "E8", "E9"))
 *          .ttl(Duration.ofMinutes(2))
 *          .acquire()) {
 *   charge(customer);
 *   hold.confirm(ConfirmOptions.of(orderId, customerId));
 * } // released here if the charge failed
 * }</pre>
 *
 * <p>A <b>session hold</b> ({@link HoldBuilder#session()}, docs/sessions.md) is bound to the
 * client's connection: the daemon renews it while the connection is open and releases it at once
 * when the connection closes, so there is no TTL to keep up with. When the daemon cannot keep it,
 * or the connection ends, {@link #lost()} says why and the builder's {@link HoldBuilder#onLost
 * onLost} listener runs once.
 */
public final class Hold implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger("dev.holdfast.client");

  private final HoldfastClient client;
  private final String namespace;
  private final String partition;
  private final Target target;
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
      Target target,
      String token,
      long fence,
      Duration ttl,
      boolean degraded) {
    this.client = client;
    this.namespace = namespace;
    this.partition = partition;
    this.target = target;
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

  /** What the hold covers: its seats (and segment) or its units. */
  public Target target() {
    return target;
  }

  /**
   * The secret proof of ownership, for handing the hold to another process ({@link
   * HoldfastClient#resume}). Keep it out of logs, URLs and error messages.
   */
  public String token() {
    return token;
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
   * Why a session hold is no longer held, once the daemon reported it lost or its connection ended;
   * empty while it is held (and always for a plain hold, whose loss shows at the next call). The
   * exception is the one for the reason's code: {@link HoldfastException.NotHeld} (expired or
   * deleted, e.g. released with its token elsewhere), {@link HoldfastException.HeldByAnother} or
   * {@link HoldfastException.Confirmed} naming the resource ({@code getResourceId()}), or {@link
   * HoldfastException.Unavailable} when the connection ended (the daemon released the hold, or it
   * expires with its session TTL). A lost hold is gone: take a new one.
   */
  public Optional<HoldfastException> lost() {
    return Optional.ofNullable(lost.get());
  }

  // ---- calls through the hold ---------------------------------------------------------------

  /**
   * Sets the remaining TTL to {@code ttl} from now ({@code null} or zero: the namespace's default)
   * and returns the TTL applied. Owner-checked, all or nothing; {@link HoldfastException.NotHeld}
   * when it expired.
   */
  public CompletableFuture<Duration> extendAsync(Duration ttl, CallOptions opts) {
    ExtendRequest.Builder b =
        ExtendRequest.newBuilder()
            .setNamespace(namespace)
            .setPartition(partition)
            .setToken(token)
            .setTtlMs(Transport.ttlMs(ttl));
    target.writeTo(b);
    return client.transport.call(
        "extend",
        Request.newBuilder().setExtend(b),
        opts,
        Response.ResultCase.EXTEND,
        r -> Duration.ofMillis(Integer.toUnsignedLong(r.getExtend().getTtlMs())));
  }

  public Duration extend(Duration ttl) {
    return extend(ttl, null);
  }

  public Duration extend(Duration ttl, CallOptions opts) {
    return Blocking.await(() -> extendAsync(ttl, opts));
  }

  /** Releases the hold; the future has how many ids (legs, units) were released. */
  public CompletableFuture<Integer> releaseAsync(CallOptions opts) {
    ReleaseRequest.Builder b =
        ReleaseRequest.newBuilder().setNamespace(namespace).setPartition(partition).setToken(token);
    target.writeTo(b);
    return client
        .transport
        .call(
            "release",
            Request.newBuilder().setRelease(b),
            opts,
            Response.ResultCase.RELEASE,
            r -> r.getRelease().getReleased())
        .thenApply(this::markFinished);
  }

  public int release() {
    return release(null);
  }

  public int release(CallOptions opts) {
    return Blocking.await(() -> releaseAsync(opts));
  }

  /**
   * Turns the hold into a durable sale in PostgreSQL: claims for seats, exactly the units held for
   * pools. Safe to retry with the same idempotency key when the outcome is unknown ({@link
   * HoldfastException#isRetryable()}): a confirm that already committed answers again with {@link
   * ConfirmResult#replayed()} set.
   *
   * <p>Fails with {@link HoldfastException.Conflict} (a resource claimed by someone else, or too
   * few units left unsold; nothing was sold), {@link HoldfastException.HoldLost}, {@link
   * HoldfastException.Stale} or {@link HoldfastException.IdempotencyMismatch}.
   */
  public CompletableFuture<ConfirmResult> confirmAsync(ConfirmOptions confirm, CallOptions opts) {
    return Claims.confirmAsync(client.transport, this, confirm, opts).thenApply(this::markFinished);
  }

  public ConfirmResult confirm(ConfirmOptions confirm) {
    return confirm(confirm, null);
  }

  public ConfirmResult confirm(ConfirmOptions confirm, CallOptions opts) {
    return Blocking.await(() -> confirmAsync(confirm, opts));
  }

  /** The hold's target, with {@code owned} set where this token still holds it. */
  public CompletableFuture<StatusResult> statusAsync(CallOptions opts) {
    return client.statusAsync(namespace, partition, target, token, opts);
  }

  public StatusResult status() {
    return status(null);
  }

  public StatusResult status(CallOptions opts) {
    return Blocking.await(() -> statusAsync(opts));
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

  /**
   * The seat ids.
   *
   * @deprecated use {@code target().ids()}
   */
  @Deprecated
  public List<String> ids() {
    return target.ids();
  }

  /**
   * The journey segment.
   *
   * @deprecated use {@code target().segment()}
   */
  @Deprecated
  public Optional<Segment> segment() {
    return target.segment();
  }

  // ---- session holds ------------------------------------------------------------------------

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
    client.transport.runCallback(
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
        + " "
        + target
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
