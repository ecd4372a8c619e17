package dev.holdfast.client;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A granted hold on units of one or more pools of one partition, in a namespace of kind {@code
 * pools} (docs/pools.md): {@link HoldfastClient#holdUnits}.
 *
 * <p>Like a {@link Hold}: closing it releases it, so try-with-resources gives the units back
 * whatever happens in the block; after a successful {@link #confirm} or {@link #release} closing
 * does nothing, and a hold that expired, was taken over or sold closes quietly. The token is a
 * secret: {@link #toString()} never shows it.
 *
 * <pre>{@code
 * try (UnitsHold hold = client.holdUnits("ga", "show-2026-12-24",
 *         List.of(Units.of("adult", 2), Units.of("child", 1)), Duration.ofMinutes(10))) {
 *   charge(customer);
 *   hold.confirm(ConfirmOptions.of("order-4712:confirm", "order-4712"));
 * } catch (HoldfastException.HeldByAnother e) {
 *   // fewer units of pool e.getResourceId() free than asked: try again later
 * } catch (HoldfastException.Confirmed e) {
 *   // pool e.getResourceId() is sold out
 * }
 * }</pre>
 */
public final class UnitsHold implements AutoCloseable {
  private final HoldfastClient client;
  private final String namespace;
  private final String partition;
  private final List<Units> units;
  private final String token;
  private final long fence;
  private final Duration ttl;
  private final boolean degraded;
  private final AtomicBoolean finished = new AtomicBoolean();

  UnitsHold(
      HoldfastClient client,
      String namespace,
      String partition,
      List<Units> units,
      String token,
      long fence,
      Duration ttl,
      boolean degraded) {
    this.client = client;
    this.namespace = namespace;
    this.partition = partition;
    this.units = List.copyOf(units);
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

  /** The units held, per pool. */
  public List<Units> units() {
    return units;
  }

  /** The pools of the hold, in order. */
  public List<String> pools() {
    return Units.pools(units);
  }

  /** The hold's fencing number (unsigned; see {@link Long#toUnsignedString(long)}). */
  public long fence() {
    return fence;
  }

  /** The TTL applied at grant (zero for a {@linkplain HoldfastClient#resumeUnits resumed} hold). */
  public Duration ttl() {
    return ttl;
  }

  /** True when the namespace's best_effort policy answered without Redis: nothing is held. */
  public boolean degraded() {
    return degraded;
  }

  /**
   * The secret proof of ownership, for handing the hold to another process ({@link
   * HoldfastClient#resumeUnits}). Keep it out of logs, URLs and error messages.
   */
  public String token() {
    return token;
  }

  public CompletableFuture<Duration> extendAsync(Duration ttl, CallOptions opts) {
    return client.extendUnitsAsync(this, ttl, opts);
  }

  /**
   * Sets the remaining TTL of every pool's units to {@code ttl} from now ({@code null}: the
   * namespace's default) and returns the TTL applied. Owner-checked, all or nothing.
   */
  public Duration extend(Duration ttl) {
    return HoldfastClient.await(() -> extendAsync(ttl, null));
  }

  public Duration extend(Duration ttl, CallOptions opts) {
    return HoldfastClient.await(() -> extendAsync(ttl, opts));
  }

  public CompletableFuture<Integer> releaseAsync(CallOptions opts) {
    return client.releaseUnitsAsync(this, opts).thenApply(this::markFinished);
  }

  /** Gives the units back; returns how many units this token held and gave back. */
  public int release() {
    return HoldfastClient.await(() -> releaseAsync(null));
  }

  public int release(CallOptions opts) {
    return HoldfastClient.await(() -> releaseAsync(opts));
  }

  public CompletableFuture<UnitsConfirmation> confirmAsync(
      ConfirmOptions confirm, CallOptions opts) {
    return client.confirmUnitsAsync(this, confirm, opts).thenApply(this::markFinished);
  }

  /**
   * Sells exactly the units this hold holds, for good, in PostgreSQL. Retry an unknown outcome
   * ({@link HoldfastException#isRetryable()}) with the same idempotency key: a confirm that
   * committed answers again with {@code replayed() == true}. Fails with {@link
   * HoldfastException.Conflict} when PostgreSQL has too few units left unsold (release the hold)
   * or the hold was already confirmed, {@link HoldfastException.HoldLost} when the token holds none
   * of these units any more.
   */
  public UnitsConfirmation confirm(ConfirmOptions confirm) {
    return HoldfastClient.await(() -> confirmAsync(confirm, null));
  }

  public UnitsConfirmation confirm(ConfirmOptions confirm, CallOptions opts) {
    return HoldfastClient.await(() -> confirmAsync(confirm, opts));
  }

  /** Each pool of the hold, with {@code owned} the units this token holds and their TTL. */
  public List<PoolStatus> status() {
    return HoldfastClient.await(
        () -> client.poolStatusAsync(namespace, partition, pools(), token, null));
  }

  /**
   * Leaves the hold's scope as {@link Hold#close()} does: releases the units unless they were
   * released or confirmed through this object; {@code NOT_HELD}, {@code HELD_BY_ANOTHER}, {@code
   * CONFIRMED} and a closed client are not errors here, other failures are thrown.
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
    }
  }

  private <T> T markFinished(T value) {
    finished.set(true);
    return value;
  }

  /** Describes the hold without its token. */
  @Override
  public String toString() {
    StringBuilder b =
        new StringBuilder("UnitsHold{").append(namespace).append('/').append(partition);
    String sep = " ";
    for (Units u : units) {
      b.append(sep).append(u.pool()).append('=').append(u.count());
      sep = ",";
    }
    return b.append(" fence=")
        .append(Long.toUnsignedString(fence))
        .append(" ttl=")
        .append(ttl)
        .append(degraded ? " degraded" : "")
        .append('}')
        .toString();
  }
}
