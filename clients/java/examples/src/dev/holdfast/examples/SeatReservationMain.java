package dev.holdfast.examples;

import dev.holdfast.client.HoldfastClient;
import dev.holdfast.client.Target;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Seat reservation against a running holdfastd: our customer books E7-E9 all or nothing with a
 * session hold (waiting in line if another shopper holds one of them), pays for six seconds, longer
 * than the hold's session TTL, while the daemon keeps the hold, and confirms with an idempotency
 * key. Meanwhile a second shopper, on a connection of its own, queues for E8 for two seconds and
 * is turned away: the seat stays ours.
 *
 * <pre>
 * mvn -q test-compile exec:java -Dexec.classpathScope=test \
 *     -Dexec.mainClass=dev.holdfast.examples.SeatReservationMain \
 *     [-Dexec.args="SOCKET [RUN]"]
 * </pre>
 *
 * <p>The socket defaults to {@code $HOLDFAST_SOCKET}, else /run/holdfast/holdfast.sock. Each run
 * books on a run (partition) of its own, so it works again and again on the same daemon. It exits
 * with status 1 when the seats were not sold.
 */
public final class SeatReservationMain {
  public static void main(String[] args) throws Exception {
    if (!book(args)) {
      System.exit(1);
    }
  }

  static boolean book(String[] args) throws Exception {
    Path socket =
        args.length > 0 && !args[0].isEmpty()
            ? Path.of(args[0])
            : HoldfastClient.defaultSocketPath();
    String run =
        args.length > 1
            ? args[1]
            : "run-2026-12-01-KTX101-" + UUID.randomUUID().toString().substring(0, 6);

    try (HoldfastClient client = HoldfastClient.connect(socket);
        HoldfastClient otherShopper = HoldfastClient.connect(socket)) {
      CompletableFuture<?>[] rival = {CompletableFuture.completedFuture(null)};
      SeatReservationService.Payments payments =
          new SeatReservationService.Payments() {
            @Override
            public void charge(String orderId) throws InterruptedException {
              // While we pay, another shopper waits in line for E8, up to 2 s.
              rival[0] =
                  otherShopper
                      .hold("seat", run, Target.seats("E8"))
                      .session()
                      .waitFor(Duration.ofSeconds(2))
                      .acquireAsync()
                      .handle(
                          (h, e) -> {
                            if (h != null) { // cannot happen while our hold is kept
                              System.out.println("other shopper got E8: " + h);
                              h.close();
                            } else {
                              Throwable why = e instanceof CompletionException ? e.getCause() : e;
                              System.out.println("other shopper turned away: " + why.getMessage());
                            }
                            return null;
                          });
              System.out.println("charging " + orderId + " (6 s, longer than the session TTL)...");
              Thread.sleep(6000);
            }

            @Override
            public void refund(String orderId) {
              System.out.println("refunding " + orderId);
            }
          };
      SeatReservationService service = new SeatReservationService(client, payments);

      String orderId = "order-" + UUID.randomUUID();
      SeatReservationService.Booking b =
          service.book(run, List.of("E7", "E8", "E9"), orderId, "customer-42");
      rival[0].join();
      if (b instanceof SeatReservationService.Booking.Confirmed c) {
        System.out.println(
            "sold "
                + c.confirmation().claims().size()
                + " seats, fence "
                + Long.toUnsignedString(c.confirmation().fence())
                + (c.confirmation().replayed() ? " (replayed)" : ""));
        for (var claim : c.confirmation().claims()) {
          System.out.println("  " + claim.resourceId() + " at " + claim.confirmedAt());
        }
        return true;
      }
      System.out.println("not booked: " + b);
      return false;
    }
  }
}
