package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * What the live test classes share: the test stack (skipped without one, failed when it did not
 * start), a partition of their own per test, and clients closed after each test.
 */
@ExtendWith(LiveDaemon.class)
abstract class LiveTestBase {
  private final List<HoldfastClient> clients = new ArrayList<>();
  /** Unique per test method and run. */
  protected String partition;

  @BeforeEach
  void startLiveTest(TestInfo info) {
    LiveDaemon.Stack s = LiveDaemon.stack;
    assumeTrue(s.skipReason == null, s.skipReason);
    if (s.failure != null) {
      fail("live daemon did not start: " + s.failure);
    }
    partition =
        "java-" + info.getTestMethod().map(m -> m.getName()).orElse("t") + "-" + System.nanoTime();
  }

  @AfterEach
  void closeClients() {
    clients.forEach(HoldfastClient::close);
  }

  /** A client of the test stack, closed after the test. */
  protected HoldfastClient client(Duration defaultTimeout) {
    HoldfastClient c =
        HoldfastClient.builder(LiveDaemon.stack.socket).defaultTimeout(defaultTimeout).connect();
    clients.add(c);
    return c;
  }

  protected HoldfastClient client() {
    return client(Duration.ofSeconds(5));
  }
}
