package dev.holdfast.client;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real holdfastd for the live tests. Uses HOLDFAST_SOCKET when set; otherwise starts a private
 * stack with tools/devstack.sh (or the script named by HOLDFAST_DEVSTACK) in a temp dir, once per
 * test run, and stops it when the run ends. Without either, {@link #skipReason} says why the live
 * tests are skipped.
 */
final class LiveDaemon implements BeforeAllCallback {
  private static final ExtensionContext.Namespace NS =
      ExtensionContext.Namespace.create(LiveDaemon.class);

  static Stack stack;

  @Override
  public void beforeAll(ExtensionContext context) {
    stack =
        context
            .getRoot()
            .getStore(NS)
            .getOrComputeIfAbsent("stack", k -> Stack.start(), Stack.class);
  }

  /** The running stack, closed by JUnit after the last test of the run. */
  static final class Stack implements ExtensionContext.Store.CloseableResource {
    final Path socket;
    final Path dir; // non-null when this run started the stack
    final Path script;
    final String skipReason;
    final String failure;

    private Stack(Path socket, Path dir, Path script, String skipReason, String failure) {
      this.socket = socket;
      this.dir = dir;
      this.script = script;
      this.skipReason = skipReason;
      this.failure = failure;
    }

    static Stack start() {
      String env = System.getenv("HOLDFAST_SOCKET");
      if (env != null && !env.isEmpty()) {
        return new Stack(Path.of(env), null, null, null, null);
      }
      String alt = System.getenv("HOLDFAST_DEVSTACK"); // an alternative stack script
      Path script =
          alt != null && !alt.isEmpty()
              ? Path.of(alt)
              : RepoRoot.get().resolve("tools/devstack.sh");
      if (!Files.exists(script)) {
        return new Stack(
            null,
            null,
            null,
            "no daemon: HOLDFAST_SOCKET is unset and tools/devstack.sh does not exist yet",
            null);
      }
      Path dir;
      try {
        dir = Files.createTempDirectory("hf-java-live-");
      } catch (IOException e) {
        return new Stack(null, null, script, null, e.toString());
      }
      Path socket = dir.resolve("holdfast.sock");
      try {
        devstack(script, "up", dir);
        waitReady(socket, Duration.ofSeconds(60));
        return new Stack(socket, dir, script, null, null);
      } catch (Exception e) {
        return new Stack(socket, dir, script, null, e.getMessage() + "\n" + logTail(dir));
      }
    }

    boolean managed() {
      return dir != null;
    }

    void down() throws IOException, InterruptedException {
      devstack(script, "down", dir);
    }

    void up() throws Exception {
      devstack(script, "up", dir);
      waitReady(socket, Duration.ofSeconds(60));
    }

    /**
     * The daemon's pid: the holdfastd process whose command line mentions our stack dir, else
     * DIR/holdfastd.pid if the stack script writes one.
     */
    Optional<Long> daemonPid() {
      String d = dir.toString();
      Optional<Long> byArgs =
          ProcessHandle.allProcesses()
              .filter(
                  p ->
                      p.info().command().map(c -> c.endsWith("holdfastd")).orElse(false)
                          && p.info()
                              .arguments()
                              .map(a -> Stream.of(a).anyMatch(x -> x.contains(d)))
                              .orElse(false))
              .map(ProcessHandle::pid)
              .findFirst();
      if (byArgs.isPresent()) {
        return byArgs;
      }
      try {
        return Optional.of(Long.parseLong(Files.readString(dir.resolve("holdfastd.pid")).trim()));
      } catch (IOException | NumberFormatException e) {
        return Optional.empty();
      }
    }

    @Override
    public void close() throws Throwable {
      if (dir == null) {
        return;
      }
      try {
        down();
      } finally {
        deleteTree(dir);
      }
    }

    /* Best effort: a server that is still exiting may remove its own socket
     * while we walk the directory. */
    private static void deleteTree(Path root) {
      for (int attempt = 0; attempt < 3 && Files.exists(root); attempt++) {
        try (Stream<Path> s = Files.walk(root)) {
          s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | java.io.UncheckedIOException e) {
          // a file vanished mid-walk: walk again
        }
      }
    }

    String logTail() {
      return dir == null ? "" : logTail(dir);
    }

    private static void devstack(Path script, String cmd, Path dir)
        throws IOException, InterruptedException {
      Process p =
          new ProcessBuilder("bash", script.toString(), cmd, dir.toString())
              .redirectErrorStream(true)
              .start();
      byte[] out = p.getInputStream().readAllBytes();
      if (!p.waitFor(3, TimeUnit.MINUTES) || p.exitValue() != 0) {
        p.destroyForcibly();
        throw new IOException(
            "tools/devstack.sh "
                + cmd
                + " "
                + dir
                + " failed:\n"
                + new String(out, StandardCharsets.UTF_8));
      }
    }

    static void waitReady(Path socket, Duration within) throws Exception {
      long deadline = System.nanoTime() + within.toNanos();
      Exception last = null;
      try (HoldfastClient c =
          HoldfastClient.builder(socket).defaultTimeout(Duration.ofSeconds(2)).build()) {
        while (System.nanoTime() < deadline) {
          try {
            var h = c.health();
            if (h.getReady()) {
              return;
            }
            last = new IllegalStateException("health: " + h);
          } catch (HoldfastException e) {
            last = e;
          }
          Thread.sleep(100);
        }
      }
      throw new IllegalStateException("daemon at " + socket + " never became ready", last);
    }

    private static String logTail(Path dir) {
      try {
        List<String> lines = Files.readAllLines(dir.resolve("holdfastd.log"));
        return "holdfastd.log (tail):\n"
            + String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
      } catch (IOException e) {
        return "";
      }
    }
  }
}
