package dev.holdfast.client;

import dev.holdfast.v1.Code;
import dev.holdfast.v1.HoldRequest;
import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * A hold to take, with its options: {@link HoldfastClient#hold(String, String, Target)} makes one,
 * {@link #acquire()} sends it. Every option is optional; without any it is the namespace's default
 * TTL, no wait, the client's default deadline. Seats and units alike, all or nothing.
 *
 * <pre>{@code
 * // Bound to this client's connection, renewed by the daemon; waits up to 5 s for a holder.
 * try (Hold hold = client.hold("seat", run, Target.seats("E7", "E8"))
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
  private final String namespace;
  private final String partition;
  private Target target;
  private Duration ttl; // null: the namespace's default
  private boolean session;
  private Consumer<Hold> onLost;
  private Duration wait = Duration.ZERO;
  private CallOptions options; // null: the client's defaults

  HoldBuilder(HoldfastClient client, String namespace, String partition, Target target) {
    this.client = client;
    this.namespace = Objects.requireNonNull(namespace, "namespace");
    this.partition = Objects.requireNonNull(partition, "partition");
    this.target = Objects.requireNonNull(target, "target");
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
   * The target's seats on {@code segment} instead ({@code null}: none).
   *
   * @deprecated put the segment in the target: {@code Target.seats(...).onSegment(from, to)}
   */
  @Deprecated
  public HoldBuilder segment(Segment segment) {
    this.target = target.onSegment(segment);
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
   * <p>The call's deadline is raised to at least {@code wait} + {@link HoldfastClient#WAIT_MARGIN},
   * so that the daemon can wait the whole time and still answer.
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
    this.options = orDefaults().withTimeout(Objects.requireNonNull(timeout, "timeout"));
    return this;
  }

  /** The call's correlation id; see {@link CallOptions#withCorrelationId}. */
  public HoldBuilder correlationId(String correlationId) {
    this.options = orDefaults().withCorrelationId(correlationId);
    return this;
  }

  private CallOptions orDefaults() {
    return options == null ? CallOptions.defaults() : options;
  }

  /**
   * Takes the hold, all of the target or nothing. Throws {@link HoldfastException.HeldByAnother}
   * (after the wait, if any; fewer units free than asked for a pool), {@link
   * HoldfastException.Confirmed} (sold; fewer units left unsold), {@code getResourceId()} naming
   * the resource, leg or pool; or {@link HoldfastException.InvalidArgument}, {@link
   * HoldfastException.Unavailable}, {@link HoldfastException.DeadlineExceeded}.
   */
  public Hold acquire() {
    return Blocking.await(this::acquireAsync);
  }

  /** Sends the Hold; the future fails with a {@link HoldfastException}. */
  public CompletableFuture<Hold> acquireAsync() {
    int ttlMs = Transport.ttlMs(ttl);
    if (session && ttlMs != 0) {
      return CompletableFuture.failedFuture(sessionWithTtl());
    }
    HoldRequest.Builder hold =
        HoldRequest.newBuilder()
            .setNamespace(namespace)
            .setPartition(partition)
            .setTtlMs(ttlMs)
            .setSession(session)
            .setWaitMs(Transport.ttlMs(wait));
    target.writeTo(hold);
    Transport transport = client.transport;
    // The daemon may wait the whole time in line: the call must outlive the wait.
    CallOptions opts =
        wait.isZero() ? options : transport.atLeast(options, wait.plus(HoldfastClient.WAIT_MARGIN));
    // Taken now: the builder may change before the answer comes.
    Target t = target;
    boolean asSession = session;
    Consumer<Hold> listener = onLost;
    Call call = transport.start("hold", Request.newBuilder().setHold(hold), opts);
    return call.future.thenApply(
        r ->
            Transport.expect(
                "hold",
                r,
                Response.ResultCase.HOLD,
                ok -> granted(ok, call.answeredOn, t, asSession, listener)));
  }

  private Hold granted(
      Response ok, Connection on, Target t, boolean asSession, Consumer<Hold> listener) {
    var g = ok.getHold();
    Hold h =
        new Hold(
            client,
            namespace,
            partition,
            t,
            g.getToken(),
            g.getFence(),
            Duration.ofMillis(Integer.toUnsignedLong(g.getTtlMs())),
            ok.getDegraded());
    if (asSession && !ok.getDegraded() && on != null) {
      h.bindSession(on.sessions, listener); // a degraded answer holds nothing to lose
    }
    return h;
  }

  private HoldfastException sessionWithTtl() {
    return HoldfastException.of(
        Code.CODE_INVALID_ARGUMENT,
        "hold",
        "a session hold takes no TTL: it lives as long as its connection (the namespace's"
            + " session_ttl_ms, renewed by the daemon)",
        "ttl_ms",
        "",
        options != null && options.correlationId() != null ? options.correlationId() : "",
        false,
        null);
  }
}
