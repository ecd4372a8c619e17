package dev.holdfast.examples;

import dev.holdfast.client.CallOptions;
import dev.holdfast.client.ConfirmOptions;
import dev.holdfast.client.ConfirmResult;
import dev.holdfast.client.Hold;
import dev.holdfast.client.HoldfastClient;
import dev.holdfast.client.HoldfastException;
import dev.holdfast.client.Target;
import java.time.Duration;
import java.util.List;

/**
 * How a Spring application would wrap the client. In a real app this class carries
 * {@code @Service}, and the client is a singleton bean closed with the context:
 *
 * <pre>{@code
 * @Configuration
 * class HoldfastConfig {
 *   @Bean(destroyMethod = "close")
 *   HoldfastClient holdfastClient(@Value("${holdfast.socket}") Path socket) {
 *     return HoldfastClient.builder(socket).defaultTimeout(Duration.ofSeconds(2)).build();
 *   }
 * }
 * }</pre>
 *
 * No Spring dependency is needed to read or run it: the annotations are left as comments.
 */
// @Service
public class SeatReservationService {
  static final String NAMESPACE = "seat";
  /** How long a booking waits in line for a seat another shopper holds right now. */
  static final Duration WAIT_IN_LINE = Duration.ofSeconds(5);

  /** The payment step; charges are keyed by order id so a retry never charges twice. */
  public interface Payments {
    void charge(String orderId) throws Exception;

    void refund(String orderId);
  }

  /** What the checkout page shows. */
  public sealed interface Booking {
    record Confirmed(ConfirmResult confirmation) implements Booking {}

    /** Another shopper still held a seat after our wait in line; pick others or come back. */
    record SeatTaken(String seat) implements Booking {}

    /** A seat is sold. */
    record SoldOut(String seat) implements Booking {}

    /**
     * The hold was lost before the sale (the daemon could not keep it, docs/sessions.md); nothing
     * was sold and the charge was refunded.
     */
    record Expired() implements Booking {}
  }

  private final HoldfastClient holdfast;
  private final Payments payments;

  // @Autowired (constructor injection)
  public SeatReservationService(HoldfastClient holdfast, Payments payments) {
    this.holdfast = holdfast;
    this.payments = payments;
  }

  /**
   * Holds all seats or none, waiting in line up to {@link #WAIT_IN_LINE} when another shopper holds
   * one, while the customer pays, then confirms with the order id as idempotency key. The hold is a
   * session hold: the daemon keeps it for as long as the payment takes (no TTL to extend) and
   * releases it at once if this process dies. It is released on every path that does not confirm.
   */
  public Booking book(String run, List<String> seats, String orderId, String customerId)
      throws Exception {
    CallOptions trace = CallOptions.defaults().withCorrelationId(orderId);
    try (Hold hold =
        holdfast
            .hold(NAMESPACE, run, Target.seats(seats))
            .session()
            .waitFor(WAIT_IN_LINE)
            .options(trace)
            .onLost(h -> System.out.println("hold lost: " + h.lost().orElseThrow().getMessage()))
            .acquire()) {
      payments.charge(orderId); // as long as it takes; a lost hold shows at confirm as HoldLost
      try {
        return new Booking.Confirmed(confirm(hold, orderId, customerId, trace));
      } catch (HoldfastException e) {
        if (e.isRetryable()) {
          // Outcome unknown: the sale may have committed. Keep the charge; a later retry
          // with the same order id answers the stored result.
          throw e;
        }
        payments.refund(orderId); // a definite "no": nothing was claimed
        if (e instanceof HoldfastException.Conflict) {
          return new Booking.SeatTaken(e.getResourceId());
        }
        if (e instanceof HoldfastException.HoldLost) {
          return new Booking.Expired();
        }
        throw e;
      }
    } catch (HoldfastException.HeldByAnother e) {
      return new Booking.SeatTaken(e.getResourceId());
    } catch (HoldfastException.Confirmed e) {
      return new Booking.SoldOut(e.getResourceId());
    }
  }

  /**
   * Retries an unknown outcome with the same key: the daemon answers a replay, never a double sale.
   */
  private ConfirmResult confirm(Hold hold, String orderId, String customerId, CallOptions trace)
      throws InterruptedException {
    ConfirmOptions opts = ConfirmOptions.of(orderId, customerId);
    for (int attempt = 1; ; attempt++) {
      try {
        return hold.confirm(opts, trace.withTimeout(Duration.ofSeconds(3)));
      } catch (HoldfastException e) {
        if (!e.isRetryable() || attempt == 3) {
          throw e;
        }
        Thread.sleep(200L * attempt);
      }
    }
  }
}
