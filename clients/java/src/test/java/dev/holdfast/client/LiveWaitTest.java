package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Waiting in line ({@code HoldRequest.wait_ms}, docs/waiting.md) against the real daemon. These
 * fail against a daemon that does not wait yet (it answers {@code HELD_BY_ANOTHER} at once).
 */
class LiveWaitTest extends LiveTestBase {
  private static final String SEAT = "seat";

  @Override
  protected HoldfastClient client() {
    return client(Duration.ofSeconds(2)); // shorter than the wait: waitFor raises it
  }

  @Test
  void waiterIsGrantedWhenTheHolderReleases() throws Exception {
    HoldfastClient a = client();
    HoldfastClient b = client();
    Hold first =
        a.hold(SEAT, partition, Target.seats("E7", "E8")).ttl(Duration.ofMinutes(1)).acquire();

    long start = System.nanoTime();
    CompletableFuture<Hold> waiting =
        b.hold(SEAT, partition, Target.seats("E8")).waitFor(Duration.ofSeconds(3)).acquireAsync();
    Thread.sleep(200);
    assertTrue(!waiting.isDone() || !waiting.isCompletedExceptionally(), "B gave up at once");
    assertEquals(2, first.release());

    try (Hold second = waiting.get(10, TimeUnit.SECONDS)) {
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertTrue(ms >= 150 && ms < 3000, "granted after " + ms + " ms");
      assertTrue(Long.compareUnsigned(second.fence(), first.fence()) > 0, "fence rises");
      assertTrue(second.status().resources().get(0).owned());
    }
  }

  @Test
  void waitThatRunsOutIsHeldByAnother() {
    HoldfastClient a = client();
    HoldfastClient b = client();
    try (Hold first =
        a.hold(SEAT, partition, Target.seats("E7")).ttl(Duration.ofMinutes(1)).acquire()) {
      long start = System.nanoTime();
      HoldfastException.HeldByAnother e =
          assertThrows(
              HoldfastException.HeldByAnother.class,
              () ->
                  b.hold(SEAT, partition, Target.seats("E7"))
                      .waitFor(Duration.ofMillis(700))
                      .acquire());
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      assertEquals("E7", e.getResourceId());
      assertTrue(ms >= 600, "answered after " + ms + " ms: the daemon did not wait");
      assertTrue(ms < 700 + HoldfastClient.WAIT_MARGIN.toMillis() + 500, "answered after " + ms);
      assertTrue(first.status().resources().get(0).owned(), "the holder keeps it");
    }
  }
}
