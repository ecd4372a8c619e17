package dev.holdfast.client;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The old handle of a units hold, kept for one release: a view of the {@link Hold} it wraps ({@link
 * #hold()}), with the old return types ({@link #status()} lists pools).
 *
 * @deprecated a units hold is a {@link Hold}: {@code client.hold(ns, partition,
 *     Target.units(...))}; removed in the next release
 */
@Deprecated
public final class UnitsHold implements AutoCloseable {
  private final Hold hold;

  UnitsHold(Hold hold) {
    this.hold = hold;
  }

  /** The hold this view forwards to. */
  public Hold hold() {
    return hold;
  }

  public String namespace() {
    return hold.namespace();
  }

  public String partition() {
    return hold.partition();
  }

  public List<Units> units() {
    return hold.target().units();
  }

  public List<String> pools() {
    return hold.target().pools();
  }

  public long fence() {
    return hold.fence();
  }

  public Duration ttl() {
    return hold.ttl();
  }

  public boolean degraded() {
    return hold.degraded();
  }

  public String token() {
    return hold.token();
  }

  public CompletableFuture<Duration> extendAsync(Duration ttl, CallOptions opts) {
    return hold.extendAsync(ttl, opts);
  }

  public Duration extend(Duration ttl) {
    return hold.extend(ttl);
  }

  public Duration extend(Duration ttl, CallOptions opts) {
    return hold.extend(ttl, opts);
  }

  public CompletableFuture<Integer> releaseAsync(CallOptions opts) {
    return hold.releaseAsync(opts);
  }

  public int release() {
    return hold.release();
  }

  public int release(CallOptions opts) {
    return hold.release(opts);
  }

  public CompletableFuture<UnitsConfirmation> confirmAsync(
      ConfirmOptions confirm, CallOptions opts) {
    return hold.confirmAsync(confirm, opts).thenApply(c -> c);
  }

  public ConfirmResult confirm(ConfirmOptions confirm) {
    return hold.confirm(confirm);
  }

  public ConfirmResult confirm(ConfirmOptions confirm, CallOptions opts) {
    return hold.confirm(confirm, opts);
  }

  /** Each pool of the hold; {@code hold().status()} has them as a {@link StatusResult}. */
  public List<PoolStatus> status() {
    return hold.status().pools();
  }

  @Override
  public void close() {
    hold.close();
  }

  @Override
  public String toString() {
    return hold.toString();
  }
}
