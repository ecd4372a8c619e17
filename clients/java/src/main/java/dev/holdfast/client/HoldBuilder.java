package dev.holdfast.client;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * A hold to take, with its options: {@link HoldfastClient#hold(String, String, List)} makes one,
 * {@link #acquire()} sends it. Every option is optional; without any it is the namespace's default
 * TTL, no wait, the client's default deadline.
 *
 * <pre>{@code
 * // Bound to this client's connection, renewed by the daemon; waits up to 5 s for a holder.
 * try (Hold hold = client.hold("seat", run, List.of("E7", "E8"))
 *          .session()
 *          .onLost(h -> log.warn("lost {}: {}", h, h.lost().orElseThrow().getMessage()))
 *          .waitFor(Duration.ofSeconds(5))
 *          .acquire()) {
 *   hold.confirm(ConfirmOptions.of(orderId, customerId));
 * } catch (HoldfastException.HeldByAnother e) {
 *   // still taken after 5 s
 * }
 * }</pre>
 *
 * <p>A builder is not thread-safe; it may be acquired more than once (each time a new hold).
 */
public final class HoldBuilder {
  private final HoldfastClient client;
  final String namespace;
  final String partition;
  final List<String> ids;
  Duration ttl; // null: the namespace's default
  Segment segment; // null: none
  boolean session;
  Consumer<Hold> onLost;
  Duration wait = Duration.ZERO;
  CallOptions options; // null: the client's defaults

  HoldBuilder(HoldfastClient client, String namespace, String partition, List<String> ids) {
    this.client = client;
    this.namespace = Objects.requireNonNull(namespace, "namespace");
    this.partition = Objects.requireNonNull(partition, "partition");
    this.ids = List.copyOf(ids);
  }

  /**
   * The hold's TTL ({@code null} or zero: the namespace's default). Not for a session hold, whose
   * TTL is the namespace's session TTL: acquiring one with a TTL fails with {@link
   * HoldfastException.InvalidArgument} naming {@code ttl_ms}, as the daemon would.
   */
  public HoldBuilder ttl(Duration ttl) {
    this.ttl = ttl;
    return this;
  }

  /**
   * Legs {@code fromStop} … {@code toStop - 1} of each id ({@code null}: none); see {@link
   * Segment}.
   */
  public HoldBuilder segment(Segment segment) {
    this.segment = segment;
    return this;
  }

  /**
   * Binds the hold to this client's connection (docs/sessions.md): the daemon renews it while the
   * connection is open and releases it at once when the connection closes (the client is closed,
   * the process exits or is killed). No TTL to extend, no extend loop. When the daemon cannot keep
   * it, or the connection ends, {@link Hold#lost()} says why and the {@link #onLost} listener runs.
   */
  public HoldBuilder session() {
    return session(true);
  }

  public HoldBuilder session(boolean session) {
    this.session = session;
    return this;
  }

  /**
   * Runs once when a session hold is lost (reported by the daemon, or its connection ended), on the
   * client's callback executor, unless the hold was released or confirmed through its object first.
   * {@link Hold#lost()} has the reason. Keep it short; an exception it throws is logged.
   */
  public HoldBuilder onLost(Consumer<Hold> listener) {
    this.onLost = listener;
    return this;
  }

  /**
   * Waits in line (docs/waiting.md) up to {@code wait} when a resource is held by another token,
   * instead of failing with {@link HoldfastException.HeldByAnother} at once: waiters on a resource
   * are served in arrival order, and a multi-id hold waits for all its ids. When the wait runs out
   * the call fails with {@code HeldByAnother} as without a wait; a sold resource fails with {@link
   * HoldfastException.Confirmed} at once. {@code null} or zero: no wait.
   *
   * <p>The call's deadline is raised to at least {@code wait} + {@link
   * HoldfastClient#WAIT_MARGIN}, so that the daemon can wait the whole time and still answer.
   */
  public HoldBuilder waitFor(Duration wait) {
    if (wait != null && wait.isNegative()) {
      throw new IllegalArgumentException("wait must not be negative: " + wait);
    }
    this.wait = wait == null ? Duration.ZERO : wait;
    return this;
  }

  /** Deadline, correlation id and traceparent of the call ({@code null}: the client's defaults). */
  public HoldBuilder options(CallOptions options) {
    this.options = options;
    return this;
  }

  /** The call's deadline; see {@link CallOptions#withTimeout}. */
  public HoldBuilder timeout(Duration timeout) {
    this.options =
        (options == null ? CallOptions.defaults() : options).withTimeout(
            Objects.requireNonNull(timeout, "timeout"));
    return this;
  }

  /** The call's correlation id; see {@link CallOptions#withCorrelationId}. */
  public HoldBuilder correlationId(String correlationId) {
    this.options =
        (options == null ? CallOptions.defaults() : options).withCorrelationId(correlationId);
    return this;
  }

  /** Sends the Hold; the future fails with a {@link HoldfastException}. */
  public CompletableFuture<Hold> acquireAsync() {
    return client.acquireAsync(this);
  }

  /**
   * Takes the hold, all ids or none. Throws {@link HoldfastException.HeldByAnother} (after the
   * wait, if any; {@code getResourceId()} names the resource), {@link
   * HoldfastException.Confirmed} (sold), {@link HoldfastException.InvalidArgument}, {@link
   * HoldfastException.Unavailable} or {@link HoldfastException.DeadlineExceeded}.
   */
  public Hold acquire() {
    return HoldfastClient.await(() -> acquireAsync());
  }
}
