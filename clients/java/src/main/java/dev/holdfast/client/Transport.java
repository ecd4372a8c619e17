package dev.holdfast.client;

import dev.holdfast.v1.Code;
import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * The call path of one client: the one connection (opened again after it breaks, with backoff while
 * the daemon is away), request ids, deadlines (sent as {@code timeout_ms} and kept here),
 * correlation ids and traceparents, and the one resend the client contract allows after a write
 * that failed. Every operation goes through {@link #call}; thread-safe.
 */
final class Transport {
  private static final int MAX_READ_BYTES = 16 * 1024 * 1024; // metrics can be large; still bounded
  // Waits between connection attempts while the daemon is away: 20 ms doubling to 500 ms, each
  // shortened by up to 20 % at random (the client contract).
  static final long MIN_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
  static final int BACKOFF_MULTIPLIER = 2;
  static final long MAX_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
  static final double BACKOFF_JITTER = 0.2;

  final Path socketPath;
  final Duration defaultTimeout;
  private final int maxFrameBytes;
  private final Executor callbacks;
  private final ScheduledThreadPoolExecutor timer;
  private final AtomicLong nextId = new AtomicLong();

  private Connection connection; // guarded by this
  private boolean closed; // guarded by this

  Transport(Path socketPath, Duration defaultTimeout, int maxFrameBytes, Executor callbacks) {
    this.socketPath = socketPath;
    this.defaultTimeout = defaultTimeout;
    this.maxFrameBytes = maxFrameBytes;
    this.callbacks = callbacks;
    this.timer =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "holdfast-timer " + socketPath);
              t.setDaemon(true);
              return t;
            });
    this.timer.setRemoveOnCancelPolicy(true); // cancelled deadlines do not pile up
  }

  /**
   * Sends {@code req} and maps an OK answer carrying the {@code expected} result with {@code
   * result}; any other answer fails the future with a {@link HoldfastException}.
   */
  <T> CompletableFuture<T> call(
      String op,
      Request.Builder req,
      CallOptions opts,
      Response.ResultCase expected,
      Function<Response, T> result) {
    return start(op, req, opts).future.thenApply(r -> expect(op, r, expected, result));
  }

  static <T> T expect(
      String op, Response r, Response.ResultCase expected, Function<Response, T> result) {
    if (r.getResultCase() != expected) {
      throw HoldfastException.malformed(op, r);
    }
    return result.apply(r);
  }

  /** Starts a call; its future completes with the daemon's OK answer. */
  Call start(String op, Request.Builder req, CallOptions opts) {
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
    Blocking.adopt(call);
    attempt(call, false, 0, null);
    return call;
  }

  /** {@code opts} with a deadline of at least {@code min}. */
  CallOptions atLeast(CallOptions opts, Duration min) {
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
      call.fail(lastDialError != null ? unreachable(call, lastDialError) : deadlineExceeded(call));
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
            call.fail(deadlineExceeded(call));
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
              Code.CODE_UNAVAILABLE, call.op, "could not send the request", call.correlationId, e));
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

  private static HoldfastException deadlineExceeded(Call call) {
    return HoldfastException.of(
        Code.CODE_DEADLINE_EXCEEDED,
        call.op,
        "deadline passed before holdfastd answered",
        call.correlationId,
        null);
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
  void awaitConnection(Duration within) {
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
        long wait = reconnectDelayNanos(attempt, ThreadLocalRandom.current().nextDouble());
        try {
          TimeUnit.NANOSECONDS.sleep(Math.min(wait, left));
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw HoldfastException.of(
              Code.CODE_UNAVAILABLE, "connect", "interrupted while connecting", "", ie);
        }
      }
    }
  }

  /** Fails calls in flight and later ones with {@link HoldfastException.ClientClosed}. */
  void close() {
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

  /**
   * The wait before connection attempt {@code attempt + 1} (0-based), for a uniform random {@code
   * u} in [0, 1): the nominal wait shortened by the jitter.
   */
  static long reconnectDelayNanos(int attempt, double u) {
    long d = MIN_BACKOFF_NANOS;
    for (int i = 0; i < attempt && d < MAX_BACKOFF_NANOS; i++) {
      d *= BACKOFF_MULTIPLIER;
    }
    d = Math.min(d, MAX_BACKOFF_NANOS);
    return (long) (d * (1 - BACKOFF_JITTER * u));
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

  /** A TTL or a wait as whole milliseconds, rounded up; 0 (none) for null, zero or negative. */
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
