package dev.holdfast.client;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real holdfastd for the live tests. They only ever talk to a stack made for tests (the client
 * contract, protos/contract/client-contract.md): they stop and restart its daemon and confirm into
 * its {@code seat} namespace, so HOLDFAST_SOCKET, which points at a user's real daemon (the README
 * tells users to export it), is ignored. The stack is the directory in HOLDFAST_TEST_STACK (where
 * {@code tools/devstack.sh up DIR} runs; the client test scripts start one and set it); otherwise
 * a private stack started with tools/devstack.sh (or the script named by HOLDFAST_DEVSTACK) in a
 * temp dir, once per test run, and stopped when the run ends. When holdfastd is not built, {@link
 * Stack#skipReason} says why the live tests are skipped.
 */
final class LiveDaemon implements BeforeAllCallback {
  static final String TEST_STACK_ENV = "HOLDFAST_TEST_STACK";

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
  /** Where the live tests' daemon comes from: "given" (a dir), "own", or "skip" (a reason). */
  record Choice(String kind, String arg) {}

  /** Never from HOLDFAST_SOCKET. */
  static Choice stackChoice(Map<String, String> env, Path repo) {
    String given = env.get(TEST_STACK_ENV);
    if (given != null && !given.isEmpty()) {
      return new Choice("given", given);
    }
    String d = env.get("HOLDFASTD");
    Path holdfastd =
        d != null && !d.isEmpty() ? Path.of(d) : repo.resolve("build/daemon/holdfastd");
    if (!Files.isExecutable(holdfastd)) {
      return new Choice(
          "skip",
          "live tests start their own stack, but "
              + holdfastd
              + " is not built (tools/build.sh), and "
              + TEST_STACK_ENV
              + " is unset");
    }
    String path = env.getOrDefault("PATH", "");
    boolean redis =
        Stream.of(path.split(":"))
            .filter(p -> !p.isEmpty())
            .anyMatch(p -> Files.isExecutable(Path.of(p, "redis-server")));
    if (!redis) {
      return new Choice(
          "skip", "live tests start their own stack, but redis-server is not installed");
    }
    return new Choice("own", "");
  }

  static final class Stack implements ExtensionContext.Store.CloseableResource {
    final Path socket;
    final Path dir; // the stack's devstack dir
    final boolean owned; // this run started the stack (and stops it)
    final Path script;
    final String skipReason;
    final String failure;

    private Stack(
        Path socket, Path dir, boolean owned, Path script, String skipReason, String failure) {
      this.socket = socket;
      this.dir = dir;
      this.owned = owned;
      this.script = script;
      this.skipReason = skipReason;
      this.failure = failure;
    }

    static Stack start() {
      String alt = System.getenv("HOLDFAST_DEVSTACK"); // an alternative stack script
      Path script =
          alt != null && !alt.isEmpty()
              ? Path.of(alt)
              : RepoRoot.get().resolve("tools/devstack.sh");
      Choice choice = stackChoice(System.getenv(), RepoRoot.get());
      if (choice.kind().equals("skip")) {
        return new Stack(null, null, false, null, choice.arg(), null);
      }
      if (choice.kind().equals("given")) {
        Path dir = Path.of(choice.arg());
        Path socket = dir.resolve("holdfast.sock");
        try {
          waitReady(socket, Duration.ofSeconds(60));
          return new Stack(socket, dir, false, script, null, null);
        } catch (Exception e) {
          return new Stack(
              socket, dir, false, script, null, TEST_STACK_ENV + "=" + dir + ": " + e.getMessage());
        }
      }
      if (!Files.exists(script)) {
        return new Stack(
            null, null, false, null, "no stack script: " + script + " is missing", null);
      }
      Path dir;
      try {
        dir = Files.createTempDirectory("hf-java-live-");
      } catch (IOException e) {
        return new Stack(null, null, false, script, null, e.toString());
      }
      Path socket = dir.resolve("holdfast.sock");
      try {
        devstack(script, "up", dir);
        waitReady(socket, Duration.ofSeconds(60));
        return new Stack(socket, dir, true, script, null, null);
      } catch (Exception e) {
        return new Stack(socket, dir, true, script, null, e.getMessage() + "\n" + logTail(dir));
      }
    }

    /** True when the tests may stop and restart the daemon: always, for a test stack. */
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
      if (dir == null || !owned) {
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
            if (h.ready()) {
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
