package dev.holdfast.client;

import dev.holdfast.v1.GetCapacityRequest;
import dev.holdfast.v1.HealthRequest;
import dev.holdfast.v1.MetricsRequest;
import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import dev.holdfast.v1.StatusRequest;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;

/**
 * Client for holdfastd over its Unix socket.
 *
 * <p>Every operation takes a {@link Target}, seats or units, and a hold of either kind is a {@link
 * Hold}:
 *
 * <pre>{@code
 * try (HoldfastClient client = HoldfastClient.connect(); // $HOLDFAST_SOCKET or /run/holdfast/...
 *      Hold hold = client.hold("seat", "run-2026-12-01-KTX101", Target.seats("E7", "E8"))
 *                        .ttl(Duration.ofMinutes(2))
 *                        .acquire()) {
 *   hold.confirm(ConfirmOptions.of(orderId, customerId));
 * } catch (HoldfastException.HeldByAnother e) {
 *   // seat e.getResourceId() is taken
 * }
 * }</pre>
 *
 * <p>One client holds one connection and multiplexes any number of concurrent calls over it. Every
 * call has a deadline ({@link CallOptions}, or the client's default) that is sent to the daemon and
 * enforced locally. When the daemon restarts, calls in flight fail with {@link
 * HoldfastException.Unavailable} ("outcome unknown") and the next call connects again, waiting for
 * the daemon until its deadline.
 *
 * <p>Each operation comes as {@code xxxAsync(...)} returning a {@link CompletableFuture} (failed
 * with a {@link HoldfastException}) and as a blocking {@code xxx(...)} that throws it. Futures
 * complete on the callback executor (default: the common pool), never on the reader thread.
 *
 * <p>The client is thread-safe; share one per process. Closing it does not release plain holds:
 * they expire with their TTL. Session holds ({@link HoldBuilder#session()}) live as long as the
 * connection: closing the client (or losing the connection) ends them, and the daemon releases them
 * at once.
 */
public final class HoldfastClient extends DeprecatedClientCalls implements AutoCloseable {
  /** Where the packaged daemon listens (the client contract, shared by every holdfast client). */
  public static final String DEFAULT_SOCKET_PATH = "/run/holdfast/holdfast.sock";

  /** The environment variable that names the daemon's socket. */
  public static final String SOCKET_ENV = "HOLDFAST_SOCKET";

  /**
   * What a call that {@linkplain HoldBuilder#waitFor waits in line} gets beyond its wait: its
   * deadline is at least the wait plus this, so the daemon can wait the whole time and still
   * answer.
   */
  public static final Duration WAIT_MARGIN = Duration.ofSeconds(1);

  /** Default deadline for calls without one. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);

  /** The daemon's default {@code limits.max_frame_bytes}. */
  public static final int DEFAULT_MAX_FRAME_BYTES = 64 * 1024;

  final Transport transport;
  private final Admin admin;

  private HoldfastClient(Builder b) {
    this.transport =
        new Transport(b.socketPath, b.defaultTimeout, b.maxFrameBytes, b.callbackExecutor);
    this.admin = new Admin(transport);
  }

  /** A builder for a client of the daemon listening on {@code socketPath}. */
  public static Builder builder(Path socketPath) {
    return new Builder(socketPath);
  }

  /** A builder for a client of the daemon at {@link #defaultSocketPath()}. */
  public static Builder builder() {
    return new Builder(defaultSocketPath());
  }

  /** Connects to the daemon with default settings; see {@link Builder#connect()}. */
  public static HoldfastClient connect(Path socketPath) {
    return builder(socketPath).connect();
  }

  /** Connects to the daemon at {@link #defaultSocketPath()} with default settings. */
  public static HoldfastClient connect() {
    return builder().connect();
  }

  /**
   * The socket a client uses when given none: {@code $HOLDFAST_SOCKET} when set and not empty, else
   * {@code /run/holdfast/holdfast.sock}.
   */
  public static Path defaultSocketPath() {
    return defaultSocketPath(System.getenv());
  }

  static Path defaultSocketPath(Map<String, String> env) {
    String s = env.get(SOCKET_ENV);
    return Path.of(s == null || s.isEmpty() ? DEFAULT_SOCKET_PATH : s);
  }

  /** Settings for a {@link HoldfastClient}. */
  public static final class Builder {
    private final Path socketPath;
    private Duration defaultTimeout = DEFAULT_TIMEOUT;
    private int maxFrameBytes = DEFAULT_MAX_FRAME_BYTES;
    private Executor callbackExecutor = ForkJoinPool.commonPool();

    private Builder(Path socketPath) {
      this.socketPath = Objects.requireNonNull(socketPath, "socketPath");
    }

    /** Deadline for calls whose {@link CallOptions} set none (default 5 s). */
    public Builder defaultTimeout(Duration timeout) {
      if (timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("timeout must be positive: " + timeout);
      }
      this.defaultTimeout = timeout;
      return this;
    }

    /**
     * Largest request the client sends (default 64 KiB). Keep it at or below the daemon's {@code
     * limits.max_frame_bytes}: the daemon drops a connection that exceeds it.
     */
    public Builder maxFrameBytes(int bytes) {
      if (bytes <= 0) {
        throw new IllegalArgumentException("maxFrameBytes must be positive");
      }
      this.maxFrameBytes = bytes;
      return this;
    }

    /** Where futures complete and their callbacks run (default: the common pool). */
    public Builder callbackExecutor(Executor executor) {
      this.callbackExecutor = Objects.requireNonNull(executor);
      return this;
    }

    /** A client that connects on its first call. */
    public HoldfastClient build() {
      return new HoldfastClient(this);
    }

    /**
     * A connected client: waits for the daemon's socket up to the default timeout, then throws
     * {@link HoldfastException.Unavailable}.
     */
    public HoldfastClient connect() {
      HoldfastClient c = build();
      try {
        c.transport.awaitConnection(defaultTimeout);
        return c;
      } catch (RuntimeException e) {
        c.close();
        throw e;
      }
    }
  }

  public Path socketPath() {
    return transport.socketPath;
  }

  // ---- operations ---------------------------------------------------------------------------

  /**
   * A hold to take on {@code target} of one partition, all or nothing: set its TTL, a {@linkplain
   * HoldBuilder#session() session}, a {@linkplain HoldBuilder#waitFor wait in line} or call
   * options, then {@link HoldBuilder#acquire()} (or {@link HoldBuilder#acquireAsync()}).
   *
   * <pre>{@code
   * try (Hold hold = client.hold("ga", show, Target.units(Map.of("adult", 2, "child", 1)))
   *          .ttl(Duration.ofMinutes(10))
   *          .acquire()) {
   *   hold.confirm(ConfirmOptions.of("order-4712:confirm", "order-4712"));
   * }
   * }</pre>
   */
  public HoldBuilder hold(String namespace, String partition, Target target) {
    return new HoldBuilder(this, namespace, partition, target);
  }

  /**
   * The hold on {@code target} that {@code token} proves, for a process that goes on with a hold
   * taken elsewhere (another process, a stored order). Nothing is sent: the daemon checks the token
   * at the first call. The fence and TTL are unknown (zero).
   */
  public Hold resume(String namespace, String partition, Target target, String token) {
    return new Hold(this, namespace, partition, target, token, 0, Duration.ZERO, false);
  }

  /**
   * Gives back what was sold under {@code reference} (the order it refunds): the target's seats
   * (its legs, on a segment) or {@code count} units of each pool, all or nothing. Otherwise nothing
   * is cancelled ({@code NOT_FOUND} or {@code CONFLICT} naming the id or pool). Retry an unknown
   * outcome with the same key.
   */
  public CompletableFuture<CancelResult> cancelAsync(
      String namespace,
      String partition,
      Target target,
      String idempotencyKey,
      String reference,
      CallOptions opts) {
    return Claims.cancelAsync(
        transport, namespace, partition, target, idempotencyKey, reference, opts);
  }

  public CancelResult cancel(
      String namespace, String partition, Target target, String idempotencyKey, String reference) {
    return cancel(namespace, partition, target, idempotencyKey, reference, null);
  }

  public CancelResult cancel(
      String namespace,
      String partition,
      Target target,
      String idempotencyKey,
      String reference,
      CallOptions opts) {
    return Blocking.await(
        () -> cancelAsync(namespace, partition, target, idempotencyKey, reference, opts));
  }

  /**
   * The state of each seat (each leg, on a segment) or pool of {@code target}. Diagnostic only: it
   * may be stale on arrival and grants nothing. With a token ({@code owned}): {@code resume(...,
   * token).status()}.
   */
  public CompletableFuture<StatusResult> statusAsync(
      String namespace, String partition, Target target, CallOptions opts) {
    return statusAsync(namespace, partition, target, "", opts);
  }

  public StatusResult status(String namespace, String partition, Target target) {
    return status(namespace, partition, target, null);
  }

  public StatusResult status(String namespace, String partition, Target target, CallOptions opts) {
    return Blocking.await(() -> statusAsync(namespace, partition, target, opts));
  }

  CompletableFuture<StatusResult> statusAsync(
      String namespace, String partition, Target target, String token, CallOptions opts) {
    StatusRequest.Builder b =
        StatusRequest.newBuilder().setNamespace(namespace).setPartition(partition).setToken(token);
    target.writeTo(b);
    return transport.call(
        "status",
        Request.newBuilder().setStatus(b),
        opts,
        Response.ResultCase.STATUS,
        r -> StatusResult.fromProto(r.getStatus()));
  }

  /**
   * The capacity in effect and the units sold of each pool, and the partition's default, as
   * PostgreSQL has them (also refreshes the daemon's Redis mirror). No pools: only the default. A
   * read, open to application clients; setting capacity is {@link #admin()}'s.
   */
  public CompletableFuture<Capacities> getCapacityAsync(
      String namespace, String partition, List<String> pools, CallOptions opts) {
    GetCapacityRequest.Builder b =
        GetCapacityRequest.newBuilder()
            .setNamespace(namespace)
            .setPartition(partition)
            .addAllPools(pools);
    return transport.call(
        "get_capacity",
        Request.newBuilder().setGetCapacity(b),
        opts,
        Response.ResultCase.GET_CAPACITY,
        r -> Capacities.fromProto(r.getGetCapacity()));
  }

  public Capacities getCapacity(String namespace, String partition, List<String> pools) {
    return getCapacity(namespace, partition, pools, null);
  }

  public Capacities getCapacity(
      String namespace, String partition, List<String> pools, CallOptions opts) {
    return Blocking.await(() -> getCapacityAsync(namespace, partition, pools, opts));
  }

  /** Whether the daemon is live and ready (Redis up, scripts loaded, not draining). */
  public CompletableFuture<Health> healthAsync(CallOptions opts) {
    return transport.call(
        "health",
        Request.newBuilder().setHealth(HealthRequest.getDefaultInstance()),
        opts,
        Response.ResultCase.HEALTH,
        r -> Health.fromProto(r.getHealth()));
  }

  public Health health() {
    return health(null);
  }

  public Health health(CallOptions opts) {
    return Blocking.await(() -> healthAsync(opts));
  }

  /** The daemon's counters in Prometheus text format. */
  public CompletableFuture<String> metricsAsync(CallOptions opts) {
    return transport.call(
        "metrics",
        Request.newBuilder().setMetrics(MetricsRequest.getDefaultInstance()),
        opts,
        Response.ResultCase.METRICS,
        r -> r.getMetrics().getText());
  }

  public String metrics() {
    return metrics(null);
  }

  public String metrics(CallOptions opts) {
    return Blocking.await(() -> metricsAsync(opts));
  }

  /** The operator's calls (capacity), on this client's connection. */
  public Admin admin() {
    return admin;
  }

  /**
   * Closes the connection. Calls in flight and later calls fail with {@link
   * HoldfastException.ClientClosed}. Plain holds are not released: they expire with their TTL.
   * Session holds end with the connection: the daemon releases them at once, and each reports
   * {@link Hold#lost()} ({@code UNAVAILABLE}).
   */
  @Override
  public void close() {
    transport.close();
  }

  /** Session holds registered on the current connection (tests). */
  int sessionHoldCount() {
    return transport.sessionHoldCount();
  }
}
