package dev.holdfast.examples;

import dev.holdfast.client.Hold;
import dev.holdfast.client.HoldfastClient;
import dev.holdfast.client.HoldfastException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;

/**
 * Seat reservation against a running holdfastd: a rival shopper grabs E8 for a moment, our customer
 * books E7-E9 all or nothing (retrying while E8 is taken), pays for four seconds while the hold is
 * extended, and confirms with an idempotency key.
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

    try (HoldfastClient client = HoldfastClient.connect(socket)) {
      try {
        Hold rival = client.hold("seat", run, List.of("E8"), Duration.ofMillis(1500));
        System.out.println("rival shopper holds E8: " + rival); // no token in toString
      } catch (HoldfastException e) {
        System.out.println("rival could not hold E8: " + e.getMessage());
      }

      SeatReservationService.Payments payments =
          new SeatReservationService.Payments() {
            @Override
            public void charge(String orderId) throws InterruptedException {
              System.out.println("charging " + orderId + " (4 s)...");
              Thread.sleep(4000);
            }

            @Override
            public void refund(String orderId) {
              System.out.println("refunding " + orderId);
            }
          };
      SeatReservationService service = new SeatReservationService(client, payments);

      String orderId = "order-" + UUID.randomUUID();
      for (int attempt = 1; attempt <= 5; attempt++) {
        SeatReservationService.Booking b =
            service.book(run, List.of("E7", "E8", "E9"), orderId, "customer-42");
        if (b instanceof SeatReservationService.Booking.SeatTaken taken) {
          System.out.println("seat " + taken.seat() + " is held by another shopper; retrying");
          Thread.sleep(500L * attempt);
          continue;
        }
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
      System.out.println("gave up: the seats stayed taken");
      return false;
    }
  }
}
