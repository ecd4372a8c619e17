package dev.holdfast.client;

import com.google.protobuf.ByteString;
import dev.holdfast.v1.CancelRequest;
import dev.holdfast.v1.Code;
import dev.holdfast.v1.ConfirmRequest;
import dev.holdfast.v1.ExtendRequest;
import dev.holdfast.v1.GetCapacityRequest;
import dev.holdfast.v1.HealthRequest;
import dev.holdfast.v1.HealthResponse;
import dev.holdfast.v1.HoldRequest;
import dev.holdfast.v1.MetricsRequest;
import dev.holdfast.v1.ReleaseRequest;
import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import dev.holdfast.v1.SetCapacityRequest;
import dev.holdfast.v1.StatusRequest;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Client for holdfastd over its Unix socket.
 *
 * <p>One client holds one connection and multiplexes any number of concurrent calls over it: each
 * request carries an id, a reader thread matches responses to callers, and answers may arrive in
 * any order. Every call has a deadline ({@link CallOptions}, or the client's default) that is sent
 * to the daemon and enforced locally. When the daemon restarts, calls in flight fail with {@link
 * HoldfastException.Unavailable} ("outcome unknown") and the next call connects again, waiting for
 * the daemon until its deadline.
 *
 * <p>Each operation comes as {@code xxxAsync(...)} returning a {@link CompletableFuture} (failed
 * with a {@link HoldfastException}) and as a blocking {@code xxx(...)} that throws it. Futures
 * complete on the callback executor (default: the common pool), never on the reader thread.
 *
 * <pre>{@code
 * try (HoldfastClient client = HoldfastClient.connect(); // $HOLDFAST_SOCKET or /run/holdfast/...
 *      Hold hold = client.hold("seat", "run-2026-12-01-KTX101", List.of("E7", "E8"),
 *                              Duration.ofMinutes(2))) {
 *   hold.confirm(ConfirmOptions.of(orderId, customerId));
 * } catch (HoldfastException.HeldByAnother e) {
 *   // seat e.getResourceId() is taken
 * }
 * }</pre>
 *
 * <p>The client is thread-safe; share one per process. Closing it does not release plain holds:
 * they expire with their TTL. Session holds ({@link HoldBuilder#session()}) live as long as the
 * connection: closing the client (or losing the connection) ends them, and the daemon releases
 * them at once.
 */
public final class HoldfastClient implements AutoCloseable {
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

  private static final int MAX_READ_BYTES = 16 * 1024 * 1024; // metrics can be large; still bounded
  // Waits between connection attempts while the daemon is away: 20 ms doubling to 500 ms, each
  // shortened by up to 20 % at random (the client contract).
  static final long MIN_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
  static final int BACKOFF_MULTIPLIER = 2;
  static final long MAX_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
  static final double BACKOFF_JITTER = 0.2;

  private final Path socketPath;
  private final Duration defaultTimeout;
  private final int maxFrameBytes;
  private final Executor callbacks;
  private final ScheduledThreadPoolExecutor timer;
  private final AtomicLong nextId = new AtomicLong();

  private Connection connection; // guarded by this
  private boolean closed; // guarded by this

  private HoldfastClient(Builder b) {
    this.socketPath = b.socketPath;
    this.defaultTimeout = b.defaultTimeout;
    this.maxFrameBytes = b.maxFrameBytes;
    this.callbacks = b.callbackExecutor;
    this.timer =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "holdfast-timer " + b.socketPath);
              t.setDaemon(true);
              return t;
            });
    this.timer.setRemoveOnCancelPolicy(true); // cancelled deadlines do not pile up
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

  /**
   * The wait before connection attempt {@code attempt + 1} (0-based), for a uniform random {@code u}
   * in [0, 1): the nominal wait shortened by the jitter.
   */
  static long reconnectDelayNanos(int attempt, double u) {
    long d = MIN_BACKOFF_NANOS;
    for (int i = 0; i < attempt && d < MAX_BACKOFF_NANOS; i++) {
      d *= BACKOFF_MULTIPLIER;
    }
    d = Math.min(d, MAX_BACKOFF_NANOS);
    return (long) (d * (1 - BACKOFF_JITTER * u));
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
        c.awaitConnection(c.defaultTimeout);
        return c;
      } catch (RuntimeException e) {
        c.close();
        throw e;
      }
    }
  }

  public Path socketPath() {
    return socketPath;
  }

  // ---- operations ---------------------------------------------------------------------------

  /**
   * Takes an expiring hold on {@code ids} of one partition, all or nothing. A {@code null} or zero
   * {@code ttl} means the namespace's default.
   *
   * <p>Fails with {@link HoldfastException.HeldByAnother} (getResourceId names the resource),
   * {@link HoldfastException.Confirmed} (already sold), {@link HoldfastException.InvalidArgument},
   * {@link HoldfastException.Unavailable} or {@link HoldfastException.DeadlineExceeded}.
   */
  public CompletableFuture<Hold> holdAsync(
      String namespace, String partition, List<String> ids, Duration ttl, CallOptions opts) {
    return holdAsync(namespace, partition, ids, null, ttl, opts);
  }

  /**
   * Takes an expiring hold on legs {@code segment.fromStop()} … {@code segment.toStop() - 1} of
   * each id, in a namespace with {@code max_legs} (journey segments; {@code null}: no segment, as
   * in the overloads without one). The hold keeps its segment: {@link Hold#extend}, {@link
   * Hold#release}, {@link Hold#confirm}, {@link Hold#status} and {@link Hold#close} act on the same
   * legs. An overlapping trip fails with {@link HoldfastException.HeldByAnother} or {@link
   * HoldfastException.Confirmed} naming the leg ({@code "E7@1"}).
   */
  public CompletableFuture<Hold> holdAsync(
      String namespace,
      String partition,
      List<String> ids,
      Segment segment,
      Duration ttl,
      CallOptions opts) {
    return new HoldBuilder(this, namespace, partition, ids)
        .segment(segment)
        .ttl(ttl)
        .options(opts)
        .acquireAsync();
  }

  /**
   * A hold to take on {@code ids} of one partition, all or nothing, with options: a {@linkplain
   * HoldBuilder#session() session hold} the daemon keeps while this client's connection lives,
   * {@linkplain HoldBuilder#waitFor waiting in line}, a TTL, a segment, call options.
   *
   * <pre>{@code
   * try (Hold hold = client.hold("seat", run, List.of("E7"))
   *          .session()
   *          .waitFor(Duration.ofSeconds(5))
   *          .acquire()) {
   *   hold.confirm(ConfirmOptions.of(orderId, customerId));
   * }
   * }</pre>
   */
  public HoldBuilder hold(String namespace, String partition, List<String> ids) {
    return new HoldBuilder(this, namespace, partition, ids);
  }

  CompletableFuture<Hold> acquireAsync(HoldBuilder b) {
    if (b.session && ttlMs(b.ttl) != 0) {
      return CompletableFuture.failedFuture(
          HoldfastException.of(
              Code.CODE_INVALID_ARGUMENT,
              "hold",
              "a session hold takes no TTL: it lives as long as its connection (the namespace's"
                  + " session_ttl_ms, renewed by the daemon)",
              "ttl_ms",
              "",
              b.options != null && b.options.correlationId() != null
                  ? b.options.correlationId()
                  : "",
              false,
              null));
    }
    List<String> idList = b.ids;
    Segment segment = b.segment;
    HoldRequest.Builder hold =
        HoldRequest.newBuilder()
            .setNamespace(b.namespace)
            .setPartition(b.partition)
            .addAllIds(idList)
            .setTtlMs(ttlMs(b.ttl))
            .setSession(b.session)
            .setWaitMs(ttlMs(b.wait));
    if (segment != null) {
      hold.setSegment(segment.toProto());
    }
    CallOptions opts = b.options;
    if (!b.wait.isZero()) {
      opts = atLeast(opts, b.wait.plus(WAIT_MARGIN));
    }
    boolean session = b.session;
    Consumer<Hold> onLost = b.onLost;
    Request.Builder req = Request.newBuilder().setHold(hold);
    Call call = start("hold", req, opts);
    return call.future.thenApply(
        r -> {
          if (!r.hasHold()) {
            throw HoldfastException.malformed("hold", r);
          }
          Hold h =
              new Hold(
                  this,
                  b.namespace,
                  b.partition,
                  idList,
                  segment,
                  r.getHold().getToken(),
                  r.getHold().getFence(),
                  Duration.ofMillis(Integer.toUnsignedLong(r.getHold().getTtlMs())),
                  r.getDegraded());
          Connection on = call.answeredOn;
          if (session && !r.getDegraded() && on != null) {
            h.bindSession(on.sessions, onLost); // a degraded answer holds nothing to lose
          }
          return h;
        });
  }

  /** {@code opts} with a deadline of at least {@code min}. */
  private CallOptions atLeast(CallOptions opts, Duration min) {
    CallOptions o = opts == null ? CallOptions.defaults() : opts;
    Duration t = o.timeout() != null ? o.timeout() : defaultTimeout;
    return t.compareTo(min) >= 0 ? o : o.withTimeout(min);
  }

  /** Runs a listener where futures complete: never on the reader thread. */
  void runCallback(Runnable r) {
    try {
      callbacks.execute(r);
    } catch (RejectedExecutionException e) {
      r.run();
    }
  }

  public Hold hold(String namespace, String partition, List<String> ids, Duration ttl) {
    return await(() -> holdAsync(namespace, partition, ids, null, ttl, null));
  }

  public Hold hold(
      String namespace, String partition, List<String> ids, Duration ttl, CallOptions opts) {
    return await(() -> holdAsync(namespace, partition, ids, null, ttl, opts));
  }

  /**
   * Holds legs of a journey segment; see {@link #holdAsync(String, String, List, Segment, Duration,
   * CallOptions)}.
   */
  public Hold hold(
      String namespace, String partition, List<String> ids, Segment segment, Duration ttl) {
    return await(() -> holdAsync(namespace, partition, ids, segment, ttl, null));
  }

  public Hold hold(
      String namespace,
      String partition,
      List<String> ids,
      Segment segment,
      Duration ttl,
      CallOptions opts) {
    return await(() -> holdAsync(namespace, partition, ids, segment, ttl, opts));
  }

  /**
   * Rebuilds a hold from its token, for a process that resumes a hold taken elsewhere. Nothing is
   * sent; the fence and TTL are unknown (zero).
   */
  public Hold resume(String namespace, String partition, List<String> ids, String token) {
    return resume(namespace, partition, ids, null, token);
  }

  /** Resumes a hold taken with a journey segment ({@code null}: none). */
  public Hold resume(
      String namespace, String partition, List<String> ids, Segment segment, String token) {
    return new Hold(
        this, namespace, partition, List.copyOf(ids), segment, token, 0, Duration.ZERO, false);
  }

  /**
   * Sets the hold's remaining TTL to {@code ttl} from now (null or zero: the namespace default) and
   * returns the TTL applied. Fails with {@link HoldfastException.NotHeld} when it expired.
   */
  public CompletableFuture<Duration> extendAsync(Hold hold, Duration ttl, CallOptions opts) {
    Request.Builder req =
        Request.newBuilder()
            .setExtend(
                ExtendRequest.newBuilder()
                    .setNamespace(hold.namespace())
                    .setPartition(hold.partition())
                    .addAllIds(hold.ids())
                    .setToken(hold.token())
                    .setTtlMs(ttlMs(ttl)));
    hold.segment().ifPresent(s -> req.getExtendBuilder().setSegment(s.toProto()));
    return call("extend", req, opts)
        .thenApply(
            r -> {
              if (!r.hasExtend()) {
                throw HoldfastException.malformed("extend", r);
              }
              return Duration.ofMillis(Integer.toUnsignedLong(r.getExtend().getTtlMs()));
            });
  }

  public Duration extend(Hold hold, Duration ttl) {
    return await(() -> extendAsync(hold, ttl, null));
  }

  public Duration extend(Hold hold, Duration ttl, CallOptions opts) {
    return await(() -> extendAsync(hold, ttl, opts));
  }

  /** Releases the hold; returns how many resources it released. */
  public CompletableFuture<Integer> releaseAsync(Hold hold, CallOptions opts) {
    Request.Builder req =
        Request.newBuilder()
            .setRelease(
                ReleaseRequest.newBuilder()
                    .setNamespace(hold.namespace())
                    .setPartition(hold.partition())
                    .addAllIds(hold.ids())
                    .setToken(hold.token()));
    hold.segment().ifPresent(s -> req.getReleaseBuilder().setSegment(s.toProto()));
    return call("release", req, opts)
        .thenApply(
            r -> {
              if (!r.hasRelease()) {
                throw HoldfastException.malformed("release", r);
              }
              return r.getRelease().getReleased();
            });
  }

  public int release(Hold hold) {
    return await(() -> releaseAsync(hold, null));
  }

  public int release(Hold hold, CallOptions opts) {
    return await(() -> releaseAsync(hold, opts));
  }

  /**
   * Turns the hold into a durable claim in PostgreSQL. Safe to retry with the same idempotency key
   * when the outcome is unknown ({@link HoldfastException#isRetryable()}): a confirm that already
   * committed answers again with {@link Confirmation#replayed()} set.
   *
   * <p>Fails with {@link HoldfastException.Conflict} (someone else claimed a resource; nothing was
   * claimed), {@link HoldfastException.HoldLost}, {@link HoldfastException.Stale} or {@link
   * HoldfastException.IdempotencyMismatch}.
   */
  public CompletableFuture<Confirmation> confirmAsync(
      Hold hold, ConfirmOptions confirm, CallOptions opts) {
    Request.Builder req =
        Request.newBuilder()
            .setConfirm(
                ConfirmRequest.newBuilder()
                    .setNamespace(hold.namespace())
                    .setPartition(hold.partition())
                    .addAllIds(hold.ids())
                    .setToken(hold.token())
                    .setIdempotencyKey(confirm.idempotencyKey())
                    .setReference(confirm.reference())
                    .setPayload(ByteString.copyFrom(confirm.payload())));
    hold.segment().ifPresent(s -> req.getConfirmBuilder().setSegment(s.toProto()));
    return call("confirm", req, opts)
        .thenApply(
            r -> {
              if (!r.hasConfirm()) {
                throw HoldfastException.malformed("confirm", r);
              }
              var c = r.getConfirm();
              List<Confirmation.Claim> claims =
                  c.getClaimsList().stream()
                      .map(
                          cl ->
                              new Confirmation.Claim(
                                  cl.getResourceId(),
                                  cl.getFence(),
                                  cl.getReference(),
                                  Instant.ofEpochMilli(cl.getConfirmedAtUnixMs())))
                      .toList();
              return new Confirmation(c.getFence(), claims, c.getReplayed());
            });
  }

  public Confirmation confirm(Hold hold, ConfirmOptions confirm) {
    return await(() -> confirmAsync(hold, confirm, null));
  }

  public Confirmation confirm(Hold hold, ConfirmOptions confirm, CallOptions opts) {
    return await(() -> confirmAsync(hold, confirm, opts));
  }

  /**
   * Removes confirmed claims so the resources can be held and sold again. All or nothing and
   * scoped to one order: {@code reference} is required and must be the one the claims were
   * confirmed with; otherwise nothing is cancelled ({@code NOT_FOUND} or {@code CONFLICT} naming
   * the id).
   */
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
   * Cancels legs {@code segment.fromStop()} … {@code segment.toStop() - 1} of each id, in a
   * namespace with {@code max_legs} ({@code null}: no segment): only those legs are freed, and only
   * when every one of them is claimed under {@code reference}.
   */
  public CompletableFuture<CancelResult> cancelAsync(
      String namespace,
      String partition,
      List<String> ids,
      Segment segment,
      String idempotencyKey,
      String reference,
      CallOptions opts) {
    CancelRequest.Builder cancel =
        CancelRequest.newBuilder()
            .setNamespace(namespace)
            .setPartition(partition)
            .addAllIds(ids)
            .setIdempotencyKey(idempotencyKey)
            .setReference(reference == null ? "" : reference);
    if (segment != null) {
      cancel.setSegment(segment.toProto());
    }
    Request.Builder req = Request.newBuilder().setCancel(cancel);
    return call("cancel", req, opts)
        .thenApply(
            r -> {
              if (!r.hasCancel()) {
                throw HoldfastException.malformed("cancel", r);
              }
              return new CancelResult(r.getCancel().getCancelled(), r.getCancel().getReplayed());
            });
  }

  public CancelResult cancel(
      String namespace,
      String partition,
      List<String> ids,
      String idempotencyKey,
      String reference) {
    return await(() -> cancelAsync(namespace, partition, ids, idempotencyKey, reference, null));
  }

  public CancelResult cancel(
      String namespace,
      String partition,
      List<String> ids,
      String idempotencyKey,
      String reference,
      CallOptions opts) {
    return await(() -> cancelAsync(namespace, partition, ids, idempotencyKey, reference, opts));
  }

  public CancelResult cancel(
      String namespace,
      String partition,
      List<String> ids,
      Segment segment,
      String idempotencyKey,
      String reference) {
    return await(() -> cancelAsync(namespace, partition, ids, segment, idempotencyKey, reference, null));
  }

  public CancelResult cancel(
      String namespace,
      String partition,
      List<String> ids,
      Segment segment,
      String idempotencyKey,
      String reference,
      CallOptions opts) {
    return await(() -> cancelAsync(namespace, partition, ids, segment, idempotencyKey, reference, opts));
  }

  /**
   * Reports the state of resources. Diagnostic only: the answer may be stale on arrival and grants
   * nothing.
   */
  public CompletableFuture<List<ResourceStatus>> statusAsync(
      String namespace, String partition, List<String> ids, CallOptions opts) {
    return statusAsync(namespace, partition, ids, "", null, opts);
  }

  /**
   * Reports the state of each leg {@code segment.fromStop()} … {@code segment.toStop() - 1} of
   * each id ({@code "<id>@<leg>"}), in a namespace with {@code max_legs} ({@code null}: no
   * segment).
   */
  public CompletableFuture<List<ResourceStatus>> statusAsync(
      String namespace, String partition, List<String> ids, Segment segment, CallOptions opts) {
    return statusAsync(namespace, partition, ids, "", segment, opts);
  }

  public List<ResourceStatus> status(String namespace, String partition, List<String> ids) {
    return await(() -> statusAsync(namespace, partition, ids, "", null, null));
  }

  public List<ResourceStatus> status(
      String namespace, String partition, List<String> ids, CallOptions opts) {
    return await(() -> statusAsync(namespace, partition, ids, "", null, opts));
  }

  public List<ResourceStatus> status(
      String namespace, String partition, List<String> ids, Segment segment) {
    return await(() -> statusAsync(namespace, partition, ids, "", segment, null));
  }

  public List<ResourceStatus> status(
      String namespace, String partition, List<String> ids, Segment segment, CallOptions opts) {
    return await(() -> statusAsync(namespace, partition, ids, "", segment, opts));
  }

  CompletableFuture<List<ResourceStatus>> statusAsync(
      String namespace,
      String partition,
      List<String> ids,
      String token,
      Segment segment,
      CallOptions opts) {
    StatusRequest.Builder status =
        StatusRequest.newBuilder()
            .setNamespace(namespace)
            .setPartition(partition)
            .addAllIds(ids)
            .setToken(token);
    if (segment != null) {
      status.setSegment(segment.toProto());
    }
    Request.Builder req = Request.newBuilder().setStatus(status);
    return call("status", req, opts)
        .thenApply(
            r -> {
              if (!r.hasStatus()) {
                throw HoldfastException.malformed("status", r);
              }
              return r.getStatus().getResourcesList().stream()
                  .map(
                      s ->
                          new ResourceStatus(
                              s.getId(),
                              s.getState(),
                              Duration.ofMillis(s.getTtlMs()),
                              s.getOwned()))
                  .toList();
            });
  }

  // ---- pools (docs/pools.md) ---------------------------------------------------------------

  /**
   * Takes {@code count} units of each pool of one partition, all or nothing, in a namespace of kind
   * {@code pools} (docs/pools.md). A {@code null} or zero {@code ttl} means the namespace's
   * default.
   *
   * <p>Fails with {@link HoldfastException.HeldByAnother} when a pool has fewer units free than
   * asked (the rest is held: try again later, holds expire) and {@link
   * HoldfastException.Confirmed} when it has fewer left unsold (sold out); {@code getResourceId()}
   * names the pool. Nothing is taken then, in any pool.
   */
  public CompletableFuture<UnitsHold> holdUnitsAsync(
      String namespace, String partition, List<Units> units, Duration ttl, CallOptions opts) {
    List<Units> unitList = List.copyOf(units);
    Request.Builder req =
        Request.newBuilder()
            .setHold(
                HoldRequest.newBuilder()
                    .setNamespace(namespace)
                    .setPartition(partition)
                    .addAllUnits(Units.toProto(unitList))
                    .setTtlMs(ttlMs(ttl)));
    return call("hold", req, opts)
        .thenApply(
            r -> {
              if (!r.hasHold()) {
                throw HoldfastException.malformed("hold", r);
              }
              return new UnitsHold(
                  this,
                  namespace,
                  partition,
                  unitList,
                  r.getHold().getToken(),
                  r.getHold().getFence(),
                  Duration.ofMillis(Integer.toUnsignedLong(r.getHold().getTtlMs())),
                  r.getDegraded());
            });
  }

  public UnitsHold holdUnits(String namespace, String partition, List<Units> units, Duration ttl) {
    return await(() -> holdUnitsAsync(namespace, partition, units, ttl, null));
  }

  public UnitsHold holdUnits(
      String namespace, String partition, List<Units> units, Duration ttl, CallOptions opts) {
    return await(() -> holdUnitsAsync(namespace, partition, units, ttl, opts));
  }

  /**
   * Rebuilds a units hold from its token, for a process that resumes a hold taken elsewhere.
   * Nothing is sent; the fence and TTL are unknown (zero).
   */
  public UnitsHold resumeUnits(
      String namespace, String partition, List<Units> units, String token) {
    return new UnitsHold(this, namespace, partition, units, token, 0, Duration.ZERO, false);
  }

  CompletableFuture<Duration> extendUnitsAsync(UnitsHold hold, Duration ttl, CallOptions opts) {
    Request.Builder req =
        Request.newBuilder()
            .setExtend(
                ExtendRequest.newBuilder()
                    .setNamespace(hold.namespace())
                    .setPartition(hold.partition())
                    .addAllPools(hold.pools())
                    .setToken(hold.token())
                    .setTtlMs(ttlMs(ttl)));
    return call("extend", req, opts)
        .thenApply(
            r -> {
              if (!r.hasExtend()) {
                throw HoldfastException.malformed("extend", r);
              }
              return Duration.ofMillis(Integer.toUnsignedLong(r.getExtend().getTtlMs()));
            });
  }

  CompletableFuture<Integer> releaseUnitsAsync(UnitsHold hold, CallOptions opts) {
    Request.Builder req =
        Request.newBuilder()
            .setRelease(
                ReleaseRequest.newBuilder()
                    .setNamespace(hold.namespace())
                    .setPartition(hold.partition())
                    .addAllPools(hold.pools())
                    .setToken(hold.token()));
    return call("release", req, opts)
        .thenApply(
            r -> {
              if (!r.hasRelease()) {
                throw HoldfastException.malformed("release", r);
              }
              return r.getRelease().getReleased();
            });
  }

  CompletableFuture<UnitsConfirmation> confirmUnitsAsync(
      UnitsHold hold, ConfirmOptions confirm, CallOptions opts) {
    Request.Builder req =
        Request.newBuilder()
            .setConfirm(
                ConfirmRequest.newBuilder()
                    .setNamespace(hold.namespace())
                    .setPartition(hold.partition())
                    .addAllUnits(Units.toProto(hold.units()))
                    .setToken(hold.token())
                    .setIdempotencyKey(confirm.idempotencyKey())
                    .setReference(confirm.reference())
                    .setPayload(ByteString.copyFrom(confirm.payload())));
    return call("confirm", req, opts)
        .thenApply(
            r -> {
              if (!r.hasConfirm()) {
                throw HoldfastException.malformed("confirm", r);
              }
              var c = r.getConfirm();
              return new UnitsConfirmation(
                  c.getFence(),
                  Units.fromProto(c.getUnitsList()),
                  Instant.ofEpochMilli(c.getConfirmedAtUnixMs()),
                  c.getReplayed());
            });
  }

  /**
   * Gives back {@code count} units of each pool out of those sold under {@code reference} (the
   * order it refunds), all pools or none. Fails with {@code NOT_FOUND} naming the pool when fewer
   * are sold under it; nothing is cancelled then. Retry an unknown outcome with the same key.
   */
  public CompletableFuture<UnitsCancelResult> cancelUnitsAsync(
      String namespace,
      String partition,
      List<Units> units,
      String idempotencyKey,
      String reference,
      CallOptions opts) {
    Request.Builder req =
        Request.newBuilder()
            .setCancel(
                CancelRequest.newBuilder()
                    .setNamespace(namespace)
                    .setPartition(partition)
                    .addAllUnits(Units.toProto(units))
                    .setIdempotencyKey(idempotencyKey)
                    .setReference(reference == null ? "" : reference));
    return call("cancel", req, opts)
        .thenApply(
            r -> {
              if (!r.hasCancel()) {
                throw HoldfastException.malformed("cancel", r);
              }
              var c = r.getCancel();
              return new UnitsCancelResult(
                  c.getCancelled(), c.getReplayed(), Units.fromProto(c.getUnitsList()));
            });
  }

  public UnitsCancelResult cancelUnits(
      String namespace,
      String partition,
      List<Units> units,
      String idempotencyKey,
      String reference) {
    return await(() -> cancelUnitsAsync(namespace, partition, units, idempotencyKey, reference, null));
  }

  public UnitsCancelResult cancelUnits(
      String namespace,
      String partition,
      List<Units> units,
      String idempotencyKey,
      String reference,
      CallOptions opts) {
    return await(() -> cancelUnitsAsync(namespace, partition, units, idempotencyKey, reference, opts));
  }

  /**
   * Capacity, sold, held and free units of each pool, from the Redis mirror. Diagnostic only: the
   * answer may be stale on arrival and grants nothing ({@link #getCapacity} reads PostgreSQL).
   */
  public CompletableFuture<List<PoolStatus>> poolStatusAsync(
      String namespace, String partition, List<String> pools, CallOptions opts) {
    return poolStatusAsync(namespace, partition, pools, "", opts);
  }

  public List<PoolStatus> poolStatus(String namespace, String partition, List<String> pools) {
    return await(() -> poolStatusAsync(namespace, partition, pools, "", null));
  }

  public List<PoolStatus> poolStatus(
      String namespace, String partition, List<String> pools, CallOptions opts) {
    return await(() -> poolStatusAsync(namespace, partition, pools, "", opts));
  }

  CompletableFuture<List<PoolStatus>> poolStatusAsync(
      String namespace, String partition, List<String> pools, String token, CallOptions opts) {
    Request.Builder req =
        Request.newBuilder()
            .setStatus(
                StatusRequest.newBuilder()
                    .setNamespace(namespace)
                    .setPartition(partition)
                    .addAllPools(pools)
                    .setToken(token));
    return call("status", req, opts)
        .thenApply(
            r -> {
              if (!r.hasStatus()) {
                throw HoldfastException.malformed("status", r);
              }
              return r.getStatus().getPoolsList().stream()
                  .map(
                      p ->
                          new PoolStatus(
                              p.getPool(),
                              p.getCapacity(),
                              p.getSold(),
                              p.getHeld(),
                              p.getFree(),
                              p.getOwned(),
                              Duration.ofMillis(p.getTtlMs())))
                  .toList();
            });
  }

  /**
   * Sets the capacity of {@code pool} (how many units it may ever have sold at once) in
   * PostgreSQL, raised or lowered. Never below what is sold: that fails with {@code
   * FAILED_PRECONDITION} ({@code getField()} "capacity", {@code getResourceId()} the pool) and
   * changes nothing. An absolute value, so retrying it is safe.
   */
  public CompletableFuture<PoolCapacity> setCapacityAsync(
      String namespace, String partition, String pool, long capacity, CallOptions opts) {
    return setCapacityAsync(
        SetCapacityRequest.newBuilder()
            .setNamespace(namespace)
            .setPartition(partition)
            .setPool(pool)
            .setCapacity(capacity),
        opts);
  }

  public PoolCapacity setCapacity(String namespace, String partition, String pool, long capacity) {
    return await(() -> setCapacityAsync(namespace, partition, pool, capacity, null));
  }

  public PoolCapacity setCapacity(
      String namespace, String partition, String pool, long capacity, CallOptions opts) {
    return await(() -> setCapacityAsync(namespace, partition, pool, capacity, opts));
  }

  /**
   * Sets the partition's default capacity: that of every pool of the partition that has none of
   * its own (e.g. 1 for one pool per user, docs/pools.md). Never below what such a pool sold.
   */
  public CompletableFuture<PoolCapacity> setDefaultCapacityAsync(
      String namespace, String partition, long capacity, CallOptions opts) {
    return setCapacityAsync(
        SetCapacityRequest.newBuilder()
            .setNamespace(namespace)
            .setPartition(partition)
            .setPartitionDefault(true)
            .setCapacity(capacity),
        opts);
  }

  public PoolCapacity setDefaultCapacity(String namespace, String partition, long capacity) {
    return await(() -> setDefaultCapacityAsync(namespace, partition, capacity, null));
  }

  public PoolCapacity setDefaultCapacity(
      String namespace, String partition, long capacity, CallOptions opts) {
    return await(() -> setDefaultCapacityAsync(namespace, partition, capacity, opts));
  }

  private CompletableFuture<PoolCapacity> setCapacityAsync(
      SetCapacityRequest.Builder set, CallOptions opts) {
    return call("set_capacity", Request.newBuilder().setSetCapacity(set), opts)
        .thenApply(
            r -> {
              if (!r.hasSetCapacity()) {
                throw HoldfastException.malformed("set_capacity", r);
              }
              return PoolCapacity.fromProto(r.getSetCapacity().getPool());
            });
  }

  /**
   * The capacity in effect and the units sold of each pool, and the partition's default, as
   * PostgreSQL has them (also refreshes the daemon's Redis mirror). No pools: only the default.
   */
  public CompletableFuture<PoolCapacities> getCapacityAsync(
      String namespace, String partition, List<String> pools, CallOptions opts) {
    Request.Builder req =
        Request.newBuilder()
            .setGetCapacity(
                GetCapacityRequest.newBuilder()
                    .setNamespace(namespace)
                    .setPartition(partition)
                    .addAllPools(pools));
    return call("get_capacity", req, opts)
        .thenApply(
            r -> {
              if (!r.hasGetCapacity()) {
                throw HoldfastException.malformed("get_capacity", r);
              }
              var g = r.getGetCapacity();
              return new PoolCapacities(
                  g.getPoolsList().stream().map(PoolCapacity::fromProto).toList(),
                  g.getDefaultCapacity());
            });
  }

  public PoolCapacities getCapacity(String namespace, String partition, List<String> pools) {
    return await(() -> getCapacityAsync(namespace, partition, pools, null));
  }

  public PoolCapacities getCapacity(
      String namespace, String partition, List<String> pools, CallOptions opts) {
    return await(() -> getCapacityAsync(namespace, partition, pools, opts));
  }

  /** Asks whether the daemon is live and ready (Redis up, scripts loaded, not draining). */
  public CompletableFuture<HealthResponse> healthAsync(CallOptions opts) {
    return call("health", Request.newBuilder().setHealth(HealthRequest.getDefaultInstance()), opts)
        .thenApply(
            r -> {
              if (!r.hasHealth()) {
                throw HoldfastException.malformed("health", r);
              }
              return r.getHealth();
            });
  }

  public HealthResponse health() {
    return await(() -> healthAsync(null));
  }

  public HealthResponse health(CallOptions opts) {
    return await(() -> healthAsync(opts));
  }

  /** The daemon's counters in Prometheus text format. */
  public CompletableFuture<String> metricsAsync(CallOptions opts) {
    return call(
            "metrics", Request.newBuilder().setMetrics(MetricsRequest.getDefaultInstance()), opts)
        .thenApply(
            r -> {
              if (!r.hasMetrics()) {
                throw HoldfastException.malformed("metrics", r);
              }
              return r.getMetrics().getText();
            });
  }

  public String metrics() {
    return await(() -> metricsAsync(null));
  }

  public String metrics(CallOptions opts) {
    return await(() -> metricsAsync(opts));
  }

  /**
   * Closes the connection. Calls in flight and later calls fail with {@link
   * HoldfastException.ClientClosed}. Plain holds are not released: they expire with their TTL.
   * Session holds end with the connection: the daemon releases them at once, and each reports
   * {@link Hold#lost()} ({@code UNAVAILABLE}).
   */
  @Override
  public void close() {
    Connection c;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      c = connection;
      connection = null;
    }
    if (c != null) {
      c.fail(new HoldfastException.ClientClosed(""));
    }
    // Pending reconnect attempts still run once and then see the client closed.
    timer.shutdown();
  }

  // ---- transport ----------------------------------------------------------------------------

  /** The blocking call being started on this thread, if any: see {@link #await(Supplier)}. */
  private static final class BlockingSlot {
    boolean armed;
    Call call;
  }

  private static final ThreadLocal<BlockingSlot> BLOCKING =
      ThreadLocal.withInitial(BlockingSlot::new);

  /**
   * Runs a blocking variant: starts {@code op} with the first call it starts on this thread marked
   * blocking, so this thread waits for that answer itself (reading it when no other thread reads:
   * no timer task, no hand-off), then waits for the future and rethrows the HoldfastException it
   * failed with.
   */
  static <T> T await(Supplier<CompletableFuture<T>> op) {
    BlockingSlot slot = BLOCKING.get();
    if (slot.armed) { // started from inside another blocking start: plain
      return await(op.get());
    }
    slot.armed = true;
    CompletableFuture<T> f;
    Call call;
    try {
      f = op.get();
    } finally {
      call = slot.call;
      slot.call = null;
      slot.armed = false;
    }
    if (call != null) {
      call.awaitBlocking();
    }
    return await(f);
  }

  /** Waits for the blocking variant: rethrows the HoldfastException the future failed with. */
  static <T> T await(CompletableFuture<T> f) {
    try {
      return f.get();
    } catch (ExecutionException e) {
      throw unwrap(e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw HoldfastException.of(
          Code.CODE_UNSPECIFIED, "", "interrupted while waiting for holdfastd", "", e);
    }
  }

  private static RuntimeException unwrap(Throwable t) {
    while (t instanceof CompletionException && t.getCause() != null) {
      t = t.getCause();
    }
    if (t instanceof RuntimeException re) {
      return re;
    }
    if (t instanceof Error err) {
      throw err;
    }
    return new IllegalStateException(t);
  }

  private CompletableFuture<Response> call(String op, Request.Builder req, CallOptions opts) {
    return start(op, req, opts).future;
  }

  private Call start(String op, Request.Builder req, CallOptions opts) {
    CallOptions o = opts == null ? CallOptions.defaults() : opts;
    Duration timeout = o.timeout() != null ? o.timeout() : defaultTimeout;
    String corr =
        o.correlationId() != null && !o.correlationId().isEmpty()
            ? o.correlationId()
            : newCorrelationId();
    req.setCorrelationId(corr);
    req.setTraceparent(TraceParents.forCall(o.traceParent()));
    long deadline = System.nanoTime() + saturatedNanos(timeout);
    Call call = new Call(op, corr, req, deadline, callbacks);
    BlockingSlot slot = BLOCKING.get();
    if (slot.armed && slot.call == null) {
      call.blocking = true;
      slot.call = call;
    }
    attempt(call, false, 0, null);
    return call;
  }

  /**
   * Sends {@code call} on the live connection, dialing (with backoff while the daemon is down)
   * until the deadline. {@code resent} marks the one resend allowed after a failed write; {@code
   * dials} counts the failed connection attempts so far.
   */
  private void attempt(Call call, boolean resent, int dials, IOException lastDialError) {
    if (call.future.isDone()) {
      return;
    }
    long left = call.deadlineNanos - System.nanoTime();
    if (left <= 0) {
      call.fail(
          lastDialError != null
              ? unreachable(call, lastDialError)
              : HoldfastException.of(
                  Code.CODE_DEADLINE_EXCEEDED,
                  call.op,
                  "deadline passed before holdfastd answered",
                  call.correlationId,
                  null));
      return;
    }
    Connection conn;
    try {
      conn = connection();
    } catch (HoldfastException.ClientClosed e) {
      call.fail(new HoldfastException.ClientClosed(call.op));
      return;
    } catch (IOException e) {
      long wait =
          Math.min(reconnectDelayNanos(dials, ThreadLocalRandom.current().nextDouble()), left);
      call.blocking = false; // the timer takes it from here; the caller waits on the future
      schedule(call, () -> attempt(call, resent, dials + 1, e), wait);
      return;
    }

    long id = nextId.incrementAndGet();
    Request request = call.request.setId(id).setTimeoutMs(timeoutMs(left)).build();
    ByteBuffer frame;
    try {
      frame = Framing.encode(request, maxFrameBytes);
    } catch (Framing.FrameTooLargeException e) {
      call.fail(
          HoldfastException.of(
              Code.CODE_RESOURCE_EXHAUSTED, call.op, e.getMessage(), call.correlationId, null));
      return;
    }
    if (call.blocking) {
      Call.Pending p = new Call.Pending(call, Thread.currentThread());
      try {
        call.sentOn = conn;
        call.sentId = id;
        call.sentResent = resent;
        call.unsent = (c, e) -> sendFailed(c, c.sentResent, dials, e);
        call.sent = p; // its thread waits for it in awaitBlocking: no timer
        conn.send(id, p, frame, call.deadlineNanos);
      } catch (IOException e) {
        call.sent = null;
        sendFailed(call, resent, dials, e);
      }
      return;
    }
    Call.Pending p = new Call.Pending(call, null);
    Runnable expire =
        () -> {
          if (conn.abandon(id, p)) {
            call.fail(
                HoldfastException.of(
                    Code.CODE_DEADLINE_EXCEEDED,
                    call.op,
                    "deadline passed before holdfastd answered",
                    call.correlationId,
                    null));
          }
        };
    ScheduledFuture<?> timeout = schedule(call, expire, left);
    if (timeout == null) {
      return;
    }
    p.timeout = timeout; // a response that arrives first cancels it
    try {
      conn.send(id, p, frame, call.deadlineNanos);
    } catch (IOException e) {
      p.finish();
      sendFailed(call, resent, dials, e);
    }
  }

  private void sendFailed(Call call, boolean resent, int dials, IOException e) {
    if (isClosed()) {
      call.fail(new HoldfastException.ClientClosed(call.op));
    } else if (!resent) {
      // The daemon never acts on an incomplete frame, so one resend on a fresh connection is
      // safe (the usual case: the daemon restarted while this client sat idle).
      attempt(call, true, dials, null);
    } else {
      call.fail(
          HoldfastException.of(
              Code.CODE_UNAVAILABLE,
              call.op,
              "could not send the request",
              call.correlationId,
              e));
    }
  }

  /** Schedules {@code task}; a client closed meanwhile fails the call instead (null). */
  private ScheduledFuture<?> schedule(Call call, Runnable task, long delayNanos) {
    try {
      return timer.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      call.fail(new HoldfastException.ClientClosed(call.op));
      return null;
    }
  }

  private HoldfastException unreachable(Call call, IOException cause) {
    return HoldfastException.of(
        Code.CODE_UNAVAILABLE,
        call.op,
        "cannot reach holdfastd at " + socketPath + ": " + cause,
        call.correlationId,
        cause);
  }

  /** Session holds registered on the current connection (tests). */
  synchronized int sessionHoldCount() {
    return connection == null ? 0 : connection.sessions.size();
  }

  private synchronized boolean isClosed() {
    return closed;
  }

  private synchronized Connection connection() throws IOException {
    if (closed) {
      throw new HoldfastException.ClientClosed("");
    }
    if (connection == null || !connection.alive()) {
      connection = null;
      connection = Connection.open(socketPath, MAX_READ_BYTES);
    }
    return connection;
  }

  /** Blocks until a connection is open or {@code within} passed. */
  private void awaitConnection(Duration within) {
    long deadline = System.nanoTime() + saturatedNanos(within);
    for (int attempt = 0; ; attempt++) {
      try {
        connection();
        return;
      } catch (IOException e) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw HoldfastException.of(
              Code.CODE_UNAVAILABLE,
              "connect",
              "cannot reach holdfastd at " + socketPath + ": " + e,
              "",
              e);
        }
        try {
          TimeUnit.NANOSECONDS.sleep(
              Math.min(reconnectDelayNanos(attempt, ThreadLocalRandom.current().nextDouble()), left));
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw HoldfastException.of(
              Code.CODE_UNAVAILABLE, "connect", "interrupted while connecting", "", ie);
        }
      }
    }
  }

  private static long saturatedNanos(Duration d) {
    try {
      return d.toNanos();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE / 2;
    }
  }

  /** Time left as timeout_ms, rounded up so the daemon never gets 0 ("its default"). */
  static int timeoutMs(long leftNanos) {
    long ms = leftNanos / 1_000_000 + (leftNanos % 1_000_000 != 0 ? 1 : 0);
    return (int) Math.max(1, Math.min(ms, 0xFFFF_FFFFL)); // uint32 on the wire
  }

  static int ttlMs(Duration ttl) {
    if (ttl == null || ttl.isZero() || ttl.isNegative()) {
      return 0;
    }
    return timeoutMs(saturatedNanos(ttl));
  }

  /**
   * A fresh correlation id, {@code java-} and 16 hex digits. It names a call in logs and traces and
   * guards nothing, so it comes from ThreadLocalRandom: a SecureRandom (one lock, /dev/urandom)
   * showed in the profile of every call.
   */
  static String newCorrelationId() {
    return "java-" + HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong());
  }
}
