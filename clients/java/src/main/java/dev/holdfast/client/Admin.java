package dev.holdfast.client;

import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import dev.holdfast.v1.SetCapacityRequest;
import java.util.concurrent.CompletableFuture;

/**
 * The operator's calls, from {@link HoldfastClient#admin()}: setting capacity now, more later. A
 * surface of its own because they change what every application may sell: the daemon is to refuse
 * them to application clients ({@code PERMISSION_DENIED}), so application code should not depend on
 * them. Reading capacity is {@link HoldfastClient#getCapacity}.
 */
public final class Admin {
  private final Transport transport;

  Admin(Transport transport) {
    this.transport = transport;
  }

  /**
   * Sets the capacity of {@code pool} (how many units it may ever have sold at once) in PostgreSQL,
   * raised or lowered. Never below what is sold: that fails with {@code FAILED_PRECONDITION}
   * ({@code getField()} "capacity", {@code getResourceId()} the pool) and changes nothing. An
   * absolute value, so retrying it is safe.
   */
  public CompletableFuture<PoolCapacity> setCapacityAsync(
      String namespace, String partition, String pool, long capacity, CallOptions opts) {
    return set(
        SetCapacityRequest.newBuilder()
            .setNamespace(namespace)
            .setPartition(partition)
            .setPool(pool)
            .setCapacity(capacity),
        opts);
  }

  public PoolCapacity setCapacity(String namespace, String partition, String pool, long capacity) {
    return setCapacity(namespace, partition, pool, capacity, null);
  }

  public PoolCapacity setCapacity(
      String namespace, String partition, String pool, long capacity, CallOptions opts) {
    return Blocking.await(() -> setCapacityAsync(namespace, partition, pool, capacity, opts));
  }

  /**
   * Sets the partition's default capacity: that of every pool of the partition that has none of its
   * own (e.g. 1 for one pool per user, docs/pools.md). Never below what such a pool sold.
   */
  public CompletableFuture<PoolCapacity> setDefaultCapacityAsync(
      String namespace, String partition, long capacity, CallOptions opts) {
    return set(
        SetCapacityRequest.newBuilder()
            .setNamespace(namespace)
            .setPartition(partition)
            .setPartitionDefault(true)
            .setCapacity(capacity),
        opts);
  }

  public PoolCapacity setDefaultCapacity(String namespace, String partition, long capacity) {
    return setDefaultCapacity(namespace, partition, capacity, null);
  }

  public PoolCapacity setDefaultCapacity(
      String namespace, String partition, long capacity, CallOptions opts) {
    return Blocking.await(() -> setDefaultCapacityAsync(namespace, partition, capacity, opts));
  }

  private CompletableFuture<PoolCapacity> set(SetCapacityRequest.Builder b, CallOptions opts) {
    return transport.call(
        "set_capacity",
        Request.newBuilder().setSetCapacity(b),
        opts,
        Response.ResultCase.SET_CAPACITY,
        r -> PoolCapacity.fromProto(r.getSetCapacity().getPool()));
  }
}
