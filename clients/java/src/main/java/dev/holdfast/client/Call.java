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
    volatile ScheduledFuture<?> timeout;
    volatile boolean writing;
    volatile boolean written;

    Pending(Call call) {
      this.call = call;
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

  /** Completes on the callback executor so user callbacks never stall the reader thread. */
  private void deliver(Runnable completion) {
    try {
      callbacks.execute(completion);
    } catch (RejectedExecutionException e) {
      completion.run();
    }
  }
}
