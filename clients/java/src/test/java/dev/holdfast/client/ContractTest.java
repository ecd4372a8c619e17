package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.holdfast.v1.Code;
import dev.holdfast.v1.ConfirmResponse;
import dev.holdfast.v1.HealthResponse;
import dev.holdfast.v1.HoldResponse;
import dev.holdfast.v1.ReleaseResponse;
import dev.holdfast.v1.Response;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The client contract (protos/contract/contract.json): this client's constants and behaviour,
 * checked against the file every client reads.
 */
class ContractTest {
  private static final JsonObject CONTRACT = load();

  private static JsonObject load() {
    try {
      Path p = RepoRoot.get().resolve("protos/contract/contract.json");
      return JsonParser.parseString(Files.readString(p, StandardCharsets.UTF_8)).getAsJsonObject();
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private static JsonObject section(String name) {
    return CONTRACT.getAsJsonObject(name);
  }

  private static List<String> strings(JsonObject o, String key) {
    List<String> out = new ArrayList<>();
    o.getAsJsonArray(key).forEach(e -> out.add(e.getAsString()));
    return out;
  }

  @Test
  void socket() {
    JsonObject s = section("socket");
    String def = s.get("default_path").getAsString();
    String env = s.get("env").getAsString();
    assertEquals(def, HoldfastClient.DEFAULT_SOCKET_PATH);
    assertEquals(env, HoldfastClient.SOCKET_ENV);
    assertEquals(Path.of(def), HoldfastClient.defaultSocketPath(Map.of()));
    assertEquals(Path.of(def), HoldfastClient.defaultSocketPath(Map.of(env, "")));
    assertEquals(
        Path.of("/tmp/from-env.sock"),
        HoldfastClient.defaultSocketPath(Map.of(env, "/tmp/from-env.sock")));
    // builder() and connect() without a path use the same rule, with the real environment.
    try (HoldfastClient c = HoldfastClient.builder().build()) {
      assertEquals(HoldfastClient.defaultSocketPath(), c.socketPath());
    }
  }

  @Test
  void timeout() throws Exception {
    JsonObject t = section("timeout");
    long defaultMs = t.get("default_ms").getAsLong();
    assertEquals(Duration.ofMillis(defaultMs), HoldfastClient.DEFAULT_TIMEOUT);
    for (JsonElement el : t.getAsJsonArray("timeout_ms_examples")) {
      JsonObject ex = el.getAsJsonObject();
      long leftNanos = ex.get("left_us").getAsLong() * 1000;
      assertEquals(
          ex.get("timeout_ms").getAsLong(),
          Integer.toUnsignedLong(Transport.timeoutMs(leftNanos)),
          "left " + ex.get("left_us") + " us");
    }
    // A call without its own timeout sends the default.
    BlockingQueue<Integer> sent = new ArrayBlockingQueue<>(1);
    try (ScriptedPeer peer =
            new ScriptedPeer(
                (p, c, req) -> {
                  sent.add(req.getTimeoutMs());
                  p.send(
                      c,
                      Response.newBuilder()
                          .setId(req.getId())
                          .setCode(Code.CODE_OK)
                          .setHealth(HealthResponse.newBuilder().setLive(true))
                          .build());
                });
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      client.health();
      int got = sent.poll(5, TimeUnit.SECONDS);
      assertTrue(got <= defaultMs && got > defaultMs - 500, "timeout_ms " + got);
    }
  }

  @Test
  void reconnectBackoff() {
    JsonObject b = section("reconnect_backoff");
    assertEquals(
        TimeUnit.MILLISECONDS.toNanos(b.get("initial_ms").getAsLong()),
        Transport.MIN_BACKOFF_NANOS);
    assertEquals(b.get("multiplier").getAsInt(), Transport.BACKOFF_MULTIPLIER);
    assertEquals(
        TimeUnit.MILLISECONDS.toNanos(b.get("max_ms").getAsLong()), Transport.MAX_BACKOFF_NANOS);
    double jitter = b.get("jitter").getAsDouble();
    assertEquals(jitter, Transport.BACKOFF_JITTER);
    for (JsonElement el : b.getAsJsonArray("nominal_examples")) {
      JsonObject ex = el.getAsJsonObject();
      int attempt = ex.get("attempt").getAsInt();
      long nominal = TimeUnit.MILLISECONDS.toNanos(ex.get("ms").getAsLong());
      assertEquals(nominal, Transport.reconnectDelayNanos(attempt, 0), "attempt " + attempt);
      long low = Transport.reconnectDelayNanos(attempt, 0.999999);
      assertTrue(low >= nominal * (1 - jitter) - 1 && low < nominal, "attempt " + attempt);
    }
  }

  @Test
  void codeNamesAndRetryable() {
    JsonObject k = CONTRACT;
    Set<String> retryable = new TreeSet<>();
    int known = 0;
    for (JsonElement el : k.getAsJsonArray("codes")) {
      JsonObject c = el.getAsJsonObject();
      int value = c.get("value").getAsInt();
      String name = c.get("name").getAsString();
      Code code = Code.forNumber(value);
      assertEquals("CODE_" + name, code.name());
      assertEquals(name, HoldfastException.codeName(code));
      assertEquals(name, HoldfastException.codeName(value));
      HoldfastException e = HoldfastException.of(code, "hold", "message", "", null);
      assertEquals(name, e.getCodeName());
      assertEquals(value, e.getCodeValue());
      if (code != Code.CODE_UNSPECIFIED) {
        assertTrue(e.getMessage().contains(name + ": message"), e.getMessage());
      }
      assertEquals(c.get("retryable").getAsBoolean(), e.isRetryable(), name);
      if (e.isRetryable()) {
        retryable.add(name);
      }
      known++;
    }
    assertEquals(Code.values().length - 1, known, "every Code but UNRECOGNIZED is listed");
    assertEquals(new TreeSet<>(strings(k, "retryable_codes")), retryable);
    for (JsonElement el : section("code_name").getAsJsonArray("unknown_examples")) {
      JsonObject ex = el.getAsJsonObject();
      assertEquals(
          ex.get("name").getAsString(), HoldfastException.codeName(ex.get("value").getAsInt()));
    }
    assertFalse(new HoldfastException.ClientClosed("hold").isRetryable());
  }

  @Test
  void unknownCodeFromTheDaemonPrintsAsCodeNumber() throws Exception {
    try (ScriptedPeer peer =
            new ScriptedPeer(
                (p, c, req) ->
                    p.send(
                        c,
                        Response.newBuilder()
                            .setId(req.getId())
                            .setCodeValue(99)
                            .setMessage("new code")
                            .build()));
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      HoldfastException e = assertThrows(HoldfastException.class, client::health);
      assertEquals("CODE_99", e.getCodeName());
      assertEquals(99, e.getCodeValue());
      assertTrue(e.getMessage().contains("CODE_99: new code"), e.getMessage());
      assertFalse(e.isRetryable());
    }
  }

  /** Grants holds and confirms; answers releases with {@code releaseCode}. */
  private static ScriptedPeer scopePeer(Code releaseCode, Code confirmCode, List<String> seen)
      throws Exception {
    return new ScriptedPeer(
        (p, c, req) -> {
          Response.Builder r = Response.newBuilder().setId(req.getId()).setCode(Code.CODE_OK);
          if (req.hasHold()) {
            seen.add("hold");
            r.setHold(HoldResponse.newBuilder().setToken("1.fake").setFence(1).setTtlMs(60000));
          } else if (req.hasRelease()) {
            seen.add("release");
            r.setCode(releaseCode)
                .setRelease(ReleaseResponse.newBuilder().setReleased(req.getRelease().getIdsCount()));
          } else if (req.hasConfirm()) {
            seen.add("confirm");
            if (confirmCode != Code.CODE_OK) {
              r.setCode(confirmCode);
            } else {
              r.setConfirm(ConfirmResponse.newBuilder().setFence(1));
            }
          }
          p.send(c, r.build());
        });
  }

  @Test
  void scopeExitQuietCodes() throws Exception {
    for (String name : strings(section("scope_exit"), "quiet_release_codes")) {
      List<String> seen = new CopyOnWriteArrayList<>();
      try (ScriptedPeer peer = scopePeer(Code.valueOf("CODE_" + name), Code.CODE_OK, seen);
          HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
        assertDoesNotThrow(
            () -> {
              try (Hold h = client.hold("seat", "p", Target.seats("E7")).acquire()) {
                assertFalse(h.token().isEmpty());
              }
            },
            name);
        assertEquals(List.of("hold", "release"), seen, name);
      }
    }
  }

  @Test
  void scopeExitOtherFailures() throws Exception {
    List<String> seen = new CopyOnWriteArrayList<>();
    try (ScriptedPeer peer = scopePeer(Code.CODE_UNAVAILABLE, Code.CODE_OK, seen);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      HoldfastException e =
          assertThrows(
              HoldfastException.Unavailable.class,
              () -> {
                try (Hold h = client.hold("seat", "p", Target.seats("E7")).acquire()) {
                  assertNotEquals("", h.token());
                }
              });
      assertTrue(e.isRetryable());
      // The body's exception goes on; the release failure rides along as suppressed.
      IllegalStateException body =
          assertThrows(
              IllegalStateException.class,
              () -> {
                try (Hold h = client.hold("seat", "p", Target.seats("E8")).acquire()) {
                  throw new IllegalStateException("body failed " + h.target());
                }
              });
      assertEquals(1, body.getSuppressed().length);
      assertTrue(body.getSuppressed()[0] instanceof HoldfastException.Unavailable);
    }
  }

  @Test
  void scopeExitAfterConfirmReleaseAndFailedConfirm() throws Exception {
    JsonObject k = section("scope_exit");
    assertEquals(
        List.of("released through the hold", "confirmed through the hold"),
        strings(k, "sends_release_unless"));
    assertTrue(k.get("failed_confirm_still_releases").getAsBoolean());
    List<String> seen = new CopyOnWriteArrayList<>();
    try (ScriptedPeer peer = scopePeer(Code.CODE_OK, Code.CODE_OK, seen);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      try (Hold h = client.hold("seat", "p", Target.seats("E7")).acquire()) {
        h.confirm(ConfirmOptions.of("k1", "order-1"));
      }
      try (Hold h = client.hold("seat", "p", Target.seats("E8")).acquire()) {
        h.release();
      }
      assertEquals(List.of("hold", "confirm", "hold", "release"), seen);
    }
    List<String> seen2 = new CopyOnWriteArrayList<>();
    try (ScriptedPeer peer = scopePeer(Code.CODE_OK, Code.CODE_CONFLICT, seen2);
        HoldfastClient client = HoldfastClient.builder(peer.path).build()) {
      assertThrows(
          HoldfastException.Conflict.class,
          () -> {
            try (Hold h = client.hold("seat", "p", Target.seats("E9")).acquire()) {
              h.confirm(ConfirmOptions.of("k2", "order-2"));
            }
          });
      assertEquals(List.of("hold", "confirm", "release"), seen2);
    }
  }

  @Test
  void scopeExitWithAClosedClientIsQuiet() throws Exception {
    assertTrue(section("scope_exit").get("quiet_when_client_closed").getAsBoolean());
    List<String> seen = new CopyOnWriteArrayList<>();
    try (ScriptedPeer peer = scopePeer(Code.CODE_OK, Code.CODE_OK, seen)) {
      HoldfastClient client = HoldfastClient.builder(peer.path).build();
      Hold h = client.hold("seat", "p", Target.seats("E7")).acquire();
      client.close();
      assertDoesNotThrow(h::close);
    }
  }

  @Test
  void liveTestsIgnoreHoldfastSocket() {
    JsonObject t = section("tests");
    assertEquals(t.get("stack_env").getAsString(), LiveDaemon.TEST_STACK_ENV);
    assertEquals(List.of("HOLDFAST_SOCKET"), strings(t, "ignored_env"));
    Path repo = RepoRoot.get();
    Map<String, String> real = Map.of("HOLDFAST_SOCKET", "/run/holdfast/holdfast.sock");
    String kind = LiveDaemon.stackChoice(real, repo).kind();
    assertTrue(kind.equals("own") || kind.equals("skip"), kind);
    assertEquals(
        new LiveDaemon.Choice("given", "/tmp/stack"),
        LiveDaemon.stackChoice(
            Map.of(
                "HOLDFAST_SOCKET", "/run/holdfast/holdfast.sock",
                LiveDaemon.TEST_STACK_ENV, "/tmp/stack"),
            repo));
  }
}
