package dev.holdfast.client;

import dev.holdfast.v1.Code;
import dev.holdfast.v1.Response;

/**
 * A failed holdfast call. {@link #getCode()} says what happened; each code the caller is likely to
 * act on also has its own subclass ({@link HeldByAnother}, {@link Conflict}, ...), so a {@code
 * catch} can pick the cases it handles. Messages never contain a token.
 */
public class HoldfastException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final Code code;
  private final int codeValue;
  private final String op;
  private final String field;
  private final String resourceId;
  private final String correlationId;
  private final boolean degraded;

  HoldfastException(
      Code code,
      String op,
      String message,
      String field,
      String resourceId,
      String correlationId,
      boolean degraded,
      Throwable cause) {
    this(code, valueOf(code), op, message, field, resourceId, correlationId, degraded, cause);
  }

  HoldfastException(
      Code code,
      int codeValue,
      String op,
      String message,
      String field,
      String resourceId,
      String correlationId,
      boolean degraded,
      Throwable cause) {
    super(describe(code, codeValue, op, message, field, resourceId, correlationId), cause);
    this.code = code;
    this.codeValue = codeValue;
    this.op = op == null ? "" : op;
    this.field = field == null ? "" : field;
    this.resourceId = resourceId == null ? "" : resourceId;
    this.correlationId = correlationId == null ? "" : correlationId;
    this.degraded = degraded;
  }

  /**
   * The result code ({@code CODE_UNSPECIFIED} for {@link ClientClosed}, {@code UNRECOGNIZED} for a
   * code from a newer daemon; {@link #getCodeValue()} has its number).
   */
  public Code getCode() {
    return code;
  }

  /** The code's number on the wire. */
  public int getCodeValue() {
    return codeValue;
  }

  /**
   * The code as every holdfast client prints it: {@code "HELD_BY_ANOTHER"} (the enum name without
   * {@code CODE_}), {@code "CODE_99"} for a code this client does not know.
   */
  public String getCodeName() {
    return codeName(codeValue);
  }

  /** {@code "NOT_FOUND"} for {@code CODE_NOT_FOUND}: the enum name without its prefix. */
  public static String codeName(Code code) {
    return code == Code.UNRECOGNIZED ? "UNRECOGNIZED" : codeName(code.getNumber());
  }

  /** {@code "NOT_FOUND"} for 14; {@code "CODE_99"} for a value this client does not know. */
  public static String codeName(int value) {
    Code c = Code.forNumber(value);
    return c == null ? "CODE_" + value : c.name().substring("CODE_".length());
  }

  private static int valueOf(Code code) {
    return code == Code.UNRECOGNIZED ? -1 : code.getNumber();
  }

  /** The operation: "hold", "extend", "release", "confirm", ... */
  public String getOp() {
    return op;
  }

  /** The offending request field for {@code CODE_INVALID_ARGUMENT}, or "". */
  public String getField() {
    return field;
  }

  /** The resource the code is about (e.g. the seat held by another), or "". */
  public String getResourceId() {
    return resourceId;
  }

  /** The request's correlation id, to find the daemon's log line. */
  public String getCorrelationId() {
    return correlationId;
  }

  /** True when the namespace's best_effort policy answered without Redis. */
  public boolean isDegraded() {
    return degraded;
  }

  /**
   * True when sending the same call again, after a wait, may succeed: {@code UNAVAILABLE}, {@code
   * DEADLINE_EXCEEDED} (the outcome may be unknown) and {@code RESOURCE_EXHAUSTED} (a limit refused
   * the request before acting on it). Retry Confirm and Cancel only with the same idempotency key.
   * False for a closed client and for codes this client does not know.
   */
  public boolean isRetryable() {
    return code == Code.CODE_UNAVAILABLE
        || code == Code.CODE_DEADLINE_EXCEEDED
        || code == Code.CODE_RESOURCE_EXHAUSTED;
  }

  private static String describe(
      Code code,
      int codeValue,
      String op,
      String message,
      String field,
      String resourceId,
      String corr) {
    StringBuilder b = new StringBuilder();
    if (op != null && !op.isEmpty()) {
      b.append(op).append(": ");
    }
    if (code != Code.CODE_UNSPECIFIED) { // no daemon code (closed client, interrupt)
      b.append(codeName(codeValue));
    }
    if (message != null && !message.isEmpty()) {
      b.append(code != Code.CODE_UNSPECIFIED ? ": " : "").append(message);
    }
    if (resourceId != null && !resourceId.isEmpty()) {
      b.append(" (resource ").append(resourceId).append(')');
    }
    if (field != null && !field.isEmpty()) {
      b.append(" (field ").append(field).append(')');
    }
    if (corr != null && !corr.isEmpty()) {
      b.append(" [correlation_id=").append(corr).append(']');
    }
    return b.toString();
  }

  /** Builds the exception for a non-OK response. */
  static HoldfastException fromResponse(String op, Response r) {
    Code code = r.getCode();
    String message = r.getMessage();
    if (code == Code.UNRECOGNIZED) { // a newer daemon: keep its number for getCodeName()
      return new HoldfastException(
          code,
          r.getCodeValue(),
          op,
          message,
          r.getError().getField(),
          r.getError().getResourceId(),
          r.getCorrelationId(),
          r.getDegraded(),
          null);
    }
    if (code == Code.CODE_UNSPECIFIED) {
      message = "daemon answered without a result code: " + message;
      code = Code.CODE_INTERNAL;
    }
    return of(
        code,
        op,
        message,
        r.getError().getField(),
        r.getError().getResourceId(),
        r.getCorrelationId(),
        r.getDegraded(),
        null);
  }

  static HoldfastException of(Code code, String op, String message, String corr, Throwable cause) {
    return of(code, op, message, "", "", corr, false, cause);
  }

  static HoldfastException of(
      Code code,
      String op,
      String message,
      String field,
      String resourceId,
      String corr,
      boolean degraded,
      Throwable cause) {
    switch (code) {
      case CODE_HELD_BY_ANOTHER:
        return new HeldByAnother(op, message, field, resourceId, corr, degraded, cause);
      case CODE_NOT_HELD:
        return new NotHeld(op, message, field, resourceId, corr, degraded, cause);
      case CODE_CONFIRMED:
        return new Confirmed(op, message, field, resourceId, corr, degraded, cause);
      case CODE_INVALID_ARGUMENT:
        return new InvalidArgument(op, message, field, resourceId, corr, degraded, cause);
      case CODE_UNAVAILABLE:
        return new Unavailable(op, message, field, resourceId, corr, degraded, cause);
      case CODE_DEADLINE_EXCEEDED:
        return new DeadlineExceeded(op, message, field, resourceId, corr, degraded, cause);
      case CODE_CONFLICT:
        return new Conflict(op, message, field, resourceId, corr, degraded, cause);
      case CODE_HOLD_LOST:
        return new HoldLost(op, message, field, resourceId, corr, degraded, cause);
      case CODE_STALE:
        return new Stale(op, message, field, resourceId, corr, degraded, cause);
      case CODE_IDEMPOTENCY_MISMATCH:
        return new IdempotencyMismatch(op, message, field, resourceId, corr, degraded, cause);
      default:
        return new HoldfastException(code, op, message, field, resourceId, corr, degraded, cause);
    }
  }

  /** Another token holds at least one of the resources; {@link #getResourceId()} names it. */
  public static final class HeldByAnother extends HoldfastException {
    private static final long serialVersionUID = 1L;

    HeldByAnother(String op, String m, String f, String r, String c, boolean d, Throwable t) {
      super(Code.CODE_HELD_BY_ANOTHER, op, m, f, r, c, d, t);
    }
  }

  /** The hold expired or never existed. */
  public static final class NotHeld extends HoldfastException {
    private static final long serialVersionUID = 1L;

    NotHeld(String op, String m, String f, String r, String c, boolean d, Throwable t) {
      super(Code.CODE_NOT_HELD, op, m, f, r, c, d, t);
    }
  }

  /** A resource is already confirmed (sold) and cannot be held. */
  public static final class Confirmed extends HoldfastException {
    private static final long serialVersionUID = 1L;

    Confirmed(String op, String m, String f, String r, String c, boolean d, Throwable t) {
      super(Code.CODE_CONFIRMED, op, m, f, r, c, d, t);
    }
  }

  /** A request field is invalid; {@link #getField()} says which. */
  public static final class InvalidArgument extends HoldfastException {
    private static final long serialVersionUID = 1L;

    InvalidArgument(String op, String m, String f, String r, String c, boolean d, Throwable t) {
      super(Code.CODE_INVALID_ARGUMENT, op, m, f, r, c, d, t);
    }
  }

  /**
   * The daemon or its backends were unreachable, or the outcome cannot be known (the connection was
   * lost with the request in flight). Safe to retry; Confirm with the same idempotency key.
   */
  public static final class Unavailable extends HoldfastException {
    private static final long serialVersionUID = 1L;

    Unavailable(String op, String m, String f, String r, String c, boolean d, Throwable t) {
      super(Code.CODE_UNAVAILABLE, op, m, f, r, c, d, t);
    }
  }

  /** The call's deadline passed before an answer was known (locally or in the daemon). */
  public static final class DeadlineExceeded extends HoldfastException {
    private static final long serialVersionUID = 1L;

    DeadlineExceeded(String op, String m, String f, String r, String c, boolean d, Throwable t) {
      super(Code.CODE_DEADLINE_EXCEEDED, op, m, f, r, c, d, t);
    }
  }

  /** Confirm: a resource is already claimed by someone else; nothing was claimed. */
  public static final class Conflict extends HoldfastException {
    private static final long serialVersionUID = 1L;

    Conflict(String op, String m, String f, String r, String c, boolean d, Throwable t) {
      super(Code.CODE_CONFLICT, op, m, f, r, c, d, t);
    }
  }

  /** Confirm: the hold is no longer owned by this token. */
  public static final class HoldLost extends HoldfastException {
    private static final long serialVersionUID = 1L;

    HoldLost(String op, String m, String f, String r, String c, boolean d, Throwable t) {
      super(Code.CODE_HOLD_LOST, op, m, f, r, c, d, t);
    }
  }

  /** Confirm: a newer holder has been seen for a resource. */
  public static final class Stale extends HoldfastException {
    private static final long serialVersionUID = 1L;

    Stale(String op, String m, String f, String r, String c, boolean d, Throwable t) {
      super(Code.CODE_STALE, op, m, f, r, c, d, t);
    }
  }

  /** Confirm/Cancel: the idempotency key was used before for a different request. */
  public static final class IdempotencyMismatch extends HoldfastException {
    private static final long serialVersionUID = 1L;

    IdempotencyMismatch(String op, String m, String f, String r, String c, boolean d, Throwable t) {
      super(Code.CODE_IDEMPOTENCY_MISMATCH, op, m, f, r, c, d, t);
    }
  }

  /** The client was closed before or while the call ran. */
  public static final class ClientClosed extends HoldfastException {
    private static final long serialVersionUID = 1L;

    ClientClosed(String op) {
      super(Code.CODE_UNSPECIFIED, op, "client is closed", "", "", "", false, null);
    }
  }

  /** Used by {@link Response} mapping when the result does not match the request. */
  static HoldfastException malformed(String op, Response r) {
    return of(
        Code.CODE_INTERNAL,
        op,
        "daemon answered OK without a " + op + " result",
        r.getCorrelationId(),
        null);
  }
}
