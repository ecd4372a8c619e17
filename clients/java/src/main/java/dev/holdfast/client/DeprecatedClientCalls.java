package dev.holdfast.client;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The calls of {@link HoldfastClient} under their old names and overloads (seats and units apart, a
 * segment as an argument, calls through the client on a hold), each forwarding to the call it
 * became. Kept for one release so that code written against 0.1 still compiles; delete this class
 * then. A superclass only so that HoldfastClient.java holds the surface and nothing else; sealed,
 * so {@link #self()} is always the client.
 */
abstract sealed class DeprecatedClientCalls permits HoldfastClient {
  private HoldfastClient self() {
    return (HoldfastClient) this;
  }

  private static Target seats(List<String> ids, Segment segment) {
    return Target.seats(ids).onSegment(segment);
  }

  // ---- seats --------------------------------------------------------------------------------

  /**
   * @deprecated use {@code hold(namespace, partition, Target.seats(ids))}
   */
  @Deprecated
  public HoldBuilder hold(String namespace, String partition, List<String> ids) {
    return self().hold(namespace, partition, Target.seats(ids));
  }

  /**
   * @deprecated use {@code hold(namespace, partition, Target.seats(ids)).ttl(ttl).acquire()}
   */
  @Deprecated
  public Hold hold(String namespace, String partition, List<String> ids, Duration ttl) {
    return hold(namespace, partition, ids, null, ttl, null);
  }

  /**
   * @deprecated use {@code hold(namespace, partition, Target.seats(ids)).ttl(ttl)...}
   */
  @Deprecated
  public Hold hold(
      String namespace, String partition, List<String> ids, Duration ttl, CallOptions opts) {
    return hold(namespace, partition, ids, null, ttl, opts);
  }

  /**
   * @deprecated use {@code hold(namespace, partition, Target.seats(ids).onSegment(segment))}
   */
  @Deprecated
  public Hold hold(
      String namespace, String partition, List<String> ids, Segment segment, Duration ttl) {
    return hold(namespace, partition, ids, segment, ttl, null);
  }

  /**
   * @deprecated use {@code hold(namespace, partition, Target.seats(ids).onSegment(segment))}
   */
  @Deprecated
  public Hold hold(
      String namespace,
      String partition,
      List<String> ids,
      Segment segment,
      Duration ttl,
      CallOptions opts) {
    return Blocking.await(() -> holdAsync(namespace, partition, ids, segment, ttl, opts));
  }

  /**
   * @deprecated use {@code hold(namespace, partition, Target.seats(ids))...acquireAsync()}
   */
  @Deprecated
  public CompletableFuture<Hold> holdAsync(
      String namespace, String partition, List<String> ids, Duration ttl, CallOptions opts) {
    return holdAsync(namespace, partition, ids, null, ttl, opts);
  }

  /**
   * @deprecated use {@code hold(namespace, partition, target)...acquireAsync()}
   */
  @Deprecated
  public CompletableFuture<Hold> holdAsync(
      String namespace,
      String partition,
      List<String> ids,
      Segment segment,
      Duration ttl,
      CallOptions opts) {
    return self()
        .hold(namespace, partition, seats(ids, segment))
        .ttl(ttl)
        .options(opts)
        .acquireAsync();
  }

  /**
   * @deprecated use {@code resume(namespace, partition, Target.seats(ids), token)}
   */
  @Deprecated
  public Hold resume(String namespace, String partition, List<String> ids, String token) {
    return resume(namespace, partition, ids, null, token);
  }

  /**
   * @deprecated use {@code resume(namespace, partition, Target.seats(ids).onSegment(s), token)}
   */
  @Deprecated
  public Hold resume(
      String namespace, String partition, List<String> ids, Segment segment, String token) {
    return self().resume(namespace, partition, seats(ids, segment), token);
  }

  /**
   * @deprecated use {@link Hold#extendAsync}
   */
  @Deprecated
  public CompletableFuture<Duration> extendAsync(Hold hold, Duration ttl, CallOptions opts) {
    return hold.extendAsync(ttl, opts);
  }

  /**
   * @deprecated use {@link Hold#extend(Duration)}
   */
  @Deprecated
  public Duration extend(Hold hold, Duration ttl) {
    return hold.extend(ttl);
  }

  /**
   * @deprecated use {@link Hold#extend(Duration, CallOptions)}
   */
  @Deprecated
  public Duration extend(Hold hold, Duration ttl, CallOptions opts) {
    return hold.extend(ttl, opts);
  }

  /**
   * @deprecated use {@link Hold#releaseAsync}
   */
  @Deprecated
  public CompletableFuture<Integer> releaseAsync(Hold hold, CallOptions opts) {
    return hold.releaseAsync(opts);
  }

  /**
   * @deprecated use {@link Hold#release()}
   */
  @Deprecated
  public int release(Hold hold) {
    return hold.release();
  }

  /**
   * @deprecated use {@link Hold#release(CallOptions)}
   */
  @Deprecated
  public int release(Hold hold, CallOptions opts) {
    return hold.release(opts);
  }

  /**
   * @deprecated use {@link Hold#confirmAsync}
   */
  @Deprecated
  public CompletableFuture<Confirmation> confirmAsync(
      Hold hold, ConfirmOptions confirm, CallOptions opts) {
    return hold.confirmAsync(confirm, opts).thenApply(c -> c);
  }

  /**
   * @deprecated use {@link Hold#confirm(ConfirmOptions)}
   */
  @Deprecated
  public ConfirmResult confirm(Hold hold, ConfirmOptions confirm) {
    return hold.confirm(confirm);
  }

  /**
   * @deprecated use {@link Hold#confirm(ConfirmOptions, CallOptions)}
   */
  @Deprecated
  public ConfirmResult confirm(Hold hold, ConfirmOptions confirm, CallOptions opts) {
    return hold.confirm(confirm, opts);
  }

  /**
   * @deprecated use {@code cancelAsync(namespace, partition, Target.seats(ids), ...)}
   */
  @Deprecated
  public CompletableFuture<CancelResult> cancelAsync(
      String namespace,
      String partition,
      List<String> ids,
      String idempotencyKey,
      String reference,
      CallOptions opts) {
    return cancelAsync(namespace, partition, ids, null, idempotencyKey, reference, opts);
  }

  /**
   * @deprecated use {@code cancelAsync(ns, partition, Target.seats(ids).onSegment(s), ...)}
   */
  @Deprecated
  public CompletableFuture<CancelResult> cancelAsync(
      String namespace,
      String partition,
      List<String> ids,
      Segment segment,
      String idempotencyKey,
      String reference,
      CallOptions opts) {
    return self()
        .cancelAsync(namespace, partition, seats(ids, segment), idempotencyKey, reference, opts);
  }

  /**
   * @deprecated use {@code cancel(namespace, partition, Target.seats(ids), key, reference)}
   */
  @Deprecated
  public CancelResult cancel(
      String namespace,
      String partition,
      List<String> ids,
      String idempotencyKey,
      String reference) {
    return cancel(namespace, partition, ids, null, idempotencyKey, reference, null);
  }

  /**
   * @deprecated use {@code cancel(namespace, partition, Target.seats(ids), ...)}
   */
  @Deprecated
  public CancelResult cancel(
      String namespace,
      String partition,
      List<String> ids,
      String idempotencyKey,
      String reference,
      CallOptions opts) {
    return cancel(namespace, partition, ids, null, idempotencyKey, reference, opts);
  }

  /**
   * @deprecated use {@code cancel(namespace, partition, Target.seats(ids).onSegment(s), ...)}
   */
  @Deprecated
  public CancelResult cancel(
      String namespace,
      String partition,
      List<String> ids,
      Segment segment,
      String idempotencyKey,
      String reference) {
    return cancel(namespace, partition, ids, segment, idempotencyKey, reference, null);
  }

  /**
   * @deprecated use {@code cancel(namespace, partition, Target.seats(ids).onSegment(s), ...)}
   */
  @Deprecated
  public CancelResult cancel(
      String namespace,
      String partition,
      List<String> ids,
      Segment segment,
      String idempotencyKey,
      String reference,
      CallOptions opts) {
    return self()
        .cancel(namespace, partition, seats(ids, segment), idempotencyKey, reference, opts);
  }

  /**
   * @deprecated use {@code statusAsync(namespace, partition, Target.seats(ids), opts)}
   */
  @Deprecated
  public CompletableFuture<List<ResourceStatus>> statusAsync(
      String namespace, String partition, List<String> ids, CallOptions opts) {
    return statusAsync(namespace, partition, ids, null, opts);
  }

  /**
   * @deprecated use {@code statusAsync(namespace, partition, Target.seats(ids).onSegment(s))}
   */
  @Deprecated
  public CompletableFuture<List<ResourceStatus>> statusAsync(
      String namespace, String partition, List<String> ids, Segment segment, CallOptions opts) {
    return self()
        .statusAsync(namespace, partition, seats(ids, segment), opts)
        .thenApply(StatusResult::resources);
  }

  /**
   * @deprecated use {@code status(namespace, partition, Target.seats(ids)).resources()}
   */
  @Deprecated
  public List<ResourceStatus> status(String namespace, String partition, List<String> ids) {
    return status(namespace, partition, ids, null, null);
  }

  /**
   * @deprecated use {@code status(namespace, partition, Target.seats(ids), opts).resources()}
   */
  @Deprecated
  public List<ResourceStatus> status(
      String namespace, String partition, List<String> ids, CallOptions opts) {
    return status(namespace, partition, ids, null, opts);
  }

  /**
   * @deprecated use {@code status(namespace, partition, Target.seats(ids).onSegment(s))}
   */
  @Deprecated
  public List<ResourceStatus> status(
      String namespace, String partition, List<String> ids, Segment segment) {
    return status(namespace, partition, ids, segment, null);
  }

  /**
   * @deprecated use {@code status(namespace, partition, Target.seats(ids).onSegment(s), opts)}
   */
  @Deprecated
  public List<ResourceStatus> status(
      String namespace, String partition, List<String> ids, Segment segment, CallOptions opts) {
    return self().status(namespace, partition, seats(ids, segment), opts).resources();
  }

  // ---- units --------------------------------------------------------------------------------

  /**
   * @deprecated use {@code hold(namespace, partition, Target.units(units))...acquireAsync()}
   */
  @Deprecated
  public CompletableFuture<UnitsHold> holdUnitsAsync(
      String namespace, String partition, List<Units> units, Duration ttl, CallOptions opts) {
    return self()
        .hold(namespace, partition, Target.units(units))
        .ttl(ttl)
        .options(opts)
        .acquireAsync()
        .thenApply(UnitsHold::new);
  }

  /**
   * @deprecated use {@code hold(namespace, partition, Target.units(units)).ttl(ttl).acquire()}
   */
  @Deprecated
  public UnitsHold holdUnits(String namespace, String partition, List<Units> units, Duration ttl) {
    return holdUnits(namespace, partition, units, ttl, null);
  }

  /**
   * @deprecated use {@code hold(namespace, partition, Target.units(units)).ttl(ttl)...}
   */
  @Deprecated
  public UnitsHold holdUnits(
      String namespace, String partition, List<Units> units, Duration ttl, CallOptions opts) {
    return Blocking.await(() -> holdUnitsAsync(namespace, partition, units, ttl, opts));
  }

  /**
   * @deprecated use {@code resume(namespace, partition, Target.units(units), token)}
   */
  @Deprecated
  public UnitsHold resumeUnits(
      String namespace, String partition, List<Units> units, String token) {
    return new UnitsHold(self().resume(namespace, partition, Target.units(units), token));
  }

  /**
   * @deprecated use {@code cancelAsync(namespace, partition, Target.units(units), ...)}
   */
  @Deprecated
  public CompletableFuture<UnitsCancelResult> cancelUnitsAsync(
      String namespace,
      String partition,
      List<Units> units,
      String idempotencyKey,
      String reference,
      CallOptions opts) {
    return self()
        .cancelAsync(namespace, partition, Target.units(units), idempotencyKey, reference, opts)
        .thenApply(c -> c);
  }

  /**
   * @deprecated use {@code cancel(namespace, partition, Target.units(units), key, reference)}
   */
  @Deprecated
  public CancelResult cancelUnits(
      String namespace,
      String partition,
      List<Units> units,
      String idempotencyKey,
      String reference) {
    return cancelUnits(namespace, partition, units, idempotencyKey, reference, null);
  }

  /**
   * @deprecated use {@code cancel(namespace, partition, Target.units(units), ...)}
   */
  @Deprecated
  public CancelResult cancelUnits(
      String namespace,
      String partition,
      List<Units> units,
      String idempotencyKey,
      String reference,
      CallOptions opts) {
    return self()
        .cancel(namespace, partition, Target.units(units), idempotencyKey, reference, opts);
  }

  /**
   * @deprecated use {@code statusAsync(namespace, partition, Target.units(pools...), opts)}
   */
  @Deprecated
  public CompletableFuture<List<PoolStatus>> poolStatusAsync(
      String namespace, String partition, List<String> pools, CallOptions opts) {
    return self()
        .statusAsync(namespace, partition, Target.units(pools.toArray(String[]::new)), opts)
        .thenApply(StatusResult::pools);
  }

  /**
   * @deprecated use {@code status(namespace, partition, Target.units(pools...)).pools()}
   */
  @Deprecated
  public List<PoolStatus> poolStatus(String namespace, String partition, List<String> pools) {
    return poolStatus(namespace, partition, pools, null);
  }

  /**
   * @deprecated use {@code status(namespace, partition, Target.units(pools...), opts).pools()}
   */
  @Deprecated
  public List<PoolStatus> poolStatus(
      String namespace, String partition, List<String> pools, CallOptions opts) {
    return Blocking.await(() -> poolStatusAsync(namespace, partition, pools, opts));
  }

  // ---- capacity: the operator's, now on admin() ---------------------------------------------

  /**
   * @deprecated use {@code admin().setCapacityAsync(...)}
   */
  @Deprecated
  public CompletableFuture<PoolCapacity> setCapacityAsync(
      String namespace, String partition, String pool, long capacity, CallOptions opts) {
    return self().admin().setCapacityAsync(namespace, partition, pool, capacity, opts);
  }

  /**
   * @deprecated use {@code admin().setCapacity(...)}
   */
  @Deprecated
  public PoolCapacity setCapacity(String namespace, String partition, String pool, long capacity) {
    return self().admin().setCapacity(namespace, partition, pool, capacity);
  }

  /**
   * @deprecated use {@code admin().setCapacity(...)}
   */
  @Deprecated
  public PoolCapacity setCapacity(
      String namespace, String partition, String pool, long capacity, CallOptions opts) {
    return self().admin().setCapacity(namespace, partition, pool, capacity, opts);
  }

  /**
   * @deprecated use {@code admin().setDefaultCapacityAsync(...)}
   */
  @Deprecated
  public CompletableFuture<PoolCapacity> setDefaultCapacityAsync(
      String namespace, String partition, long capacity, CallOptions opts) {
    return self().admin().setDefaultCapacityAsync(namespace, partition, capacity, opts);
  }

  /**
   * @deprecated use {@code admin().setDefaultCapacity(...)}
   */
  @Deprecated
  public PoolCapacity setDefaultCapacity(String namespace, String partition, long capacity) {
    return self().admin().setDefaultCapacity(namespace, partition, capacity);
  }

  /**
   * @deprecated use {@code admin().setDefaultCapacity(...)}
   */
  @Deprecated
  public PoolCapacity setDefaultCapacity(
      String namespace, String partition, long capacity, CallOptions opts) {
    return self().admin().setDefaultCapacity(namespace, partition, capacity, opts);
  }
}
