package dev.holdfast.client;

import dev.holdfast.v1.Code;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;

/**
 * The blocking variant of every call, built from its async one: {@code x(...)} is {@code
 * Blocking.await(() -> xAsync(...))}. The call it starts on this thread is marked blocking, so this
 * thread waits for that answer itself (reading it when no other thread reads: no timer task, no
 * hand-off to the callback executor), then the HoldfastException the future failed with is thrown
 * as it is, not wrapped.
 */
final class Blocking {
  private Blocking() {}

  /** The blocking call being started on this thread, if any. */
  private static final class Slot {
    boolean armed;
    Call call;
  }

  private static final ThreadLocal<Slot> SLOT = ThreadLocal.withInitial(Slot::new);

  static <T> T await(Supplier<CompletableFuture<T>> op) {
    Slot slot = SLOT.get();
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

  /** Marks {@code call} blocking when it is the first one an {@link #await} starts here. */
  static void adopt(Call call) {
    Slot slot = SLOT.get();
    if (slot.armed && slot.call == null) {
      call.blocking = true;
      slot.call = call;
    }
  }

  /** Waits for {@code f}; rethrows the HoldfastException it failed with. */
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
}
