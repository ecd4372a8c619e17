package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import dev.holdfast.v1.Request;
import dev.holdfast.v1.Response;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Golden wire frames shared by the daemon and every client (protos/testdata/README.md): decode each
 * frame, compare it with the manifest's JSON, re-encode it byte for byte.
 */
class GoldenFramesTest {

  @TestFactory
  List<DynamicTest> goldenFrames() throws Exception {
    Path dir = RepoRoot.get().resolve("protos/testdata");
    String manifest = Files.readString(dir.resolve("manifest.json"), StandardCharsets.UTF_8);
    List<DynamicTest> tests = new ArrayList<>();
    for (JsonElement el : JsonParser.parseString(manifest).getAsJsonArray()) {
      JsonObject tc = el.getAsJsonObject();
      String name = tc.get("name").getAsString();
      tests.add(DynamicTest.dynamicTest(name, () -> check(dir, tc)));
    }
    assertFalse(tests.isEmpty(), "manifest.json lists no cases");
    return tests;
  }

  private static void check(Path dir, JsonObject tc) throws Exception {
    byte[] frame = Files.readAllBytes(dir.resolve(tc.get("file").getAsString()));
    int len = Framing.bodyLength(ByteBuffer.wrap(frame), 0);
    assertEquals(frame.length - Framing.HEADER_BYTES, len, "length header vs file size");
    byte[] body = new byte[len];
    System.arraycopy(frame, Framing.HEADER_BYTES, body, 0, len);

    Message decoded;
    Message.Builder fromJson;
    switch (tc.get("type").getAsString()) {
      case "Request" -> {
        decoded = Request.parseFrom(body);
        fromJson = Request.newBuilder();
      }
      case "Response" -> {
        decoded = Response.parseFrom(body);
        fromJson = Response.newBuilder();
      }
      default -> throw new AssertionError("unknown type " + tc.get("type"));
    }
    JsonFormat.parser().merge(tc.get("json").toString(), fromJson);
    assertEquals(fromJson.build(), decoded, "decoded frame vs manifest JSON");

    ByteBuffer again = Framing.encode(decoded, 0);
    byte[] out = new byte[again.remaining()];
    again.get(out);
    assertArrayEquals(frame, out, "re-encoded frame");
  }
}
