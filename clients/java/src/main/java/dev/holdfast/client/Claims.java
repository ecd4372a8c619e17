package dev.holdfast.client;

import com.google.protobuf.ByteString;
import dev.holdfast.v1.CancelRequest;
import dev.holdfast.v1.ConfirmRequest;
import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * The calls that write claims in PostgreSQL, Confirm and Cancel (docs/confirm.md): each has an
 * idempotency key, so a retry of an unknown outcome with the same key answers the stored result
 * ({@code replayed}), never a second sale or refund.
 */
final class Claims {
  private Claims() {}

  static CompletableFuture<ConfirmResult> confirmAsync(
      Transport transport, Hold hold, ConfirmOptions confirm, CallOptions opts) {
    ConfirmRequest.Builder b =
        ConfirmRequest.newBuilder()
            .setNamespace(hold.namespace())
            .setPartition(hold.partition())
            .setToken(hold.token())
            .setIdempotencyKey(confirm.idempotencyKey())
            .setReference(confirm.reference())
            .setPayload(ByteString.copyFrom(confirm.payload()));
    hold.target().writeTo(b);
    return transport.call(
        "confirm",
        Request.newBuilder().setConfirm(b),
        opts,
        Response.ResultCase.CONFIRM,
        r -> ConfirmResult.fromProto(r.getConfirm()));
  }

  static CompletableFuture<CancelResult> cancelAsync(
      Transport transport,
      String namespace,
      String partition,
      Target target,
      String idempotencyKey,
      String reference,
      CallOptions opts) {
    CancelRequest.Builder b =
        CancelRequest.newBuilder()
            .setNamespace(namespace)
            .setPartition(partition)
            .setIdempotencyKey(Objects.requireNonNull(idempotencyKey, "idempotencyKey"))
            .setReference(reference == null ? "" : reference);
    target.writeTo(b);
    return transport.call(
        "cancel",
        Request.newBuilder().setCancel(b),
        opts,
        Response.ResultCase.CANCEL,
        r -> CancelResult.fromProto(r.getCancel()));
  }
}
