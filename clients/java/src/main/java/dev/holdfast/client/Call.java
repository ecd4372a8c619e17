package dev.holdfast.client;

import dev.holdfast.v1.Code;
import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;

/**
 * One logical call: its request, deadline and future. It may be sent more than once (a resend after
 * a failed write), each time as a new {@link Pending} with a new request id.
 */
final class Call {
  final String op;
  final String correlationId;
  final Request.Builder request;
  final long deadlineNanos;
  final CompletableFuture<Response> future = new CompletableFuture<>();
  private final Executor callbacks;
  /** The connection that carried the answer (set before the future completes). */
  volatile Connection answeredOn;
  /**
   * A blocking call: its thread waits for the answer itself ({@link #awaitBlocking}) and completes
   * the future on that thread, with no timer task and no hand-off to the callback executor. Set
   * before the first attempt, cleared if the call has to wait for a reconnect on the timer.
   */
  volatile boolean blocking;
  /** A blocking call's transmission, once written: its connection and request id. */
  Pending sent;
  Connection sentOn;
  long sentId;
  /** Whether {@link #sent} is already the one resend allowed. */
  boolean sentResent;
  /** Sends again after a frame that was never written (the client's resend rule). */
  java.util.function.BiConsumer<Call, java.io.IOException> unsent;

  Call(String op, String correlationId, Request.Builder request, long deadlineNanos, Executor cb) {
    this.op = op;
    this.correlationId = correlationId;
    this.request = request;
    this.deadlineNanos = deadlineNanos;
    this.callbacks = cb;
  }

  /** One transmission of the call, registered on a connection under one request id. */
  static final class Pending {
    private final Call call;
    /** The thread waiting for this answer (a blocking call), or null: the future is waited on. */
    final Thread waiter;
    /** For a blocking call: its answer ({@link Response}) or {@link Connection.Lost}. */
    volatile Object outcome;
    volatile ScheduledFuture<?> timeout;
    volatile boolean writing;
    volatile boolean written;
    /** Set by the connection's writer: its request id, frame and the call's deadline. */
    long id;
    java.nio.ByteBuffer frame;
    long deadlineNanos;
    /** Where the frame is: queued (0), written (1), unsent (2), dropped with its connection (3). */
    volatile int sendState;

    Pending(Call call, Thread waiter) {
      this.call = call;
      this.waiter = waiter;
    }

    /** Cancels the deadline timer and returns the call, to complete it. */
    Call finish() {
      ScheduledFuture<?> t = timeout;
      if (t != null) {
        t.cancel(false);
      }
      return call;
    }
  }

  /**
   * A blocking call, on its own thread: waits for the answer of its transmission (reading it
   * itself when no other thread reads) and completes the future with it, or with DEADLINE_EXCEEDED
   * or the interruption. Returns at once for a call with no transmission of its own.
   */
  void awaitBlocking() {
    while (true) {
      Pending p = sent;
      if (!blocking || p == null) {
        return;
      }
      if (awaitSent(p)) {
        return;
      }
    }
  }

  /** Waits for {@code p}; false when it was never written and the call was sent again. */
  private boolean awaitSent(Pending p) {
    Connection conn = sentOn;
    conn.await(p, deadlineNanos);
    Object o = p.outcome;
    if (o == null) {
      boolean interrupted = Thread.currentThread().isInterrupted();
      if (conn.abandon(sentId, p)) {
        fail(
            interrupted
                ? HoldfastException.of(
                    Code.CODE_UNSPECIFIED,
                    op,
                    "interrupted while waiting for holdfastd",
                    correlationId,
                    new InterruptedException())
                : HoldfastException.of(
                    Code.CODE_DEADLINE_EXCEEDED,
                    op,
                    "deadline passed before holdfastd answered",
                    correlationId,
                    null));
        return true;
      }
      while ((o = p.outcome) == null) { // another thread took it and is handing it over
        Thread.yield();
      }
    }
    if (o instanceof Response r) {
      respond(r, conn);
    } else if (o instanceof Connection.Lost lost && lost.unsent() && unsent != null) {
      sent = null;
      Throwable c = lost.cause();
      unsent.accept(this, c instanceof java.io.IOException io ? io : new java.io.IOException(c));
      return sent == null; // sent again (a new transmission to wait for), or completed
    } else {
      connectionLost(((Connection.Lost) o).cause());
    }
    return true;
  }

  void respond(Response r, Connection on) {
    answeredOn = on;
    if (r.getCode() == Code.CODE_OK) {
      deliver(() -> future.complete(r));
    } else {
      fail(HoldfastException.fromResponse(op, r));
    }
  }

  void connectionLost(Throwable cause) {
    if (cause instanceof HoldfastException.ClientClosed) {
      fail(new HoldfastException.ClientClosed(op));
      return;
    }
    fail(
        HoldfastException.of(
            Code.CODE_UNAVAILABLE,
            op,
            "connection to holdfastd lost before the answer; the outcome is unknown ("
                + cause.getMessage()
                + ")",
            correlationId,
            cause));
  }

  void fail(HoldfastException e) {
    deliver(() -> future.completeExceptionally(e));
  }

  /**
   * Completes on the callback executor so user callbacks never stall a reading thread; a blocking
   * call completes on its own thread (only the client's own stages hang on its future).
   */
  private void deliver(Runnable completion) {
    if (blocking) {
      completion.run();
      return;
    }
    try {
      callbacks.execute(completion);
    } catch (RejectedExecutionException e) {
      completion.run();
    }
  }
}
