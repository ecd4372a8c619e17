package dev.holdfast.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The client's public surface against {@code protos/contract/surface.json} (the names every client
 * offers) and {@code protos/contract/surface/java.json} (this client's spellings and deprecated
 * aliases), by reflection: every type is a class of dev.holdfast.client, every target a static
 * factory on Target, every client, hold and admin member a public method of HoldfastClient, Hold
 * and Admin; every deprecated alias exists and is {@code @Deprecated}, and its replacement exists.
 * And the other way round: whatever public is {@code @Deprecated} is listed, so java.json and the
 * README's "Deprecated names" cannot drift from the code. Not live.
 */
class SurfaceTest {
  private static final String PACKAGE = "dev.holdfast.client.";

  private static JsonObject read(String path) throws IOException {
    Path p = RepoRoot.get().resolve(path);
    return JsonParser.parseString(Files.readString(p, StandardCharsets.UTF_8)).getAsJsonObject();
  }

  static JsonObject surface() throws IOException {
    return read("protos/contract/surface.json");
  }

  static JsonObject java() throws IOException {
    return read("protos/contract/surface/java.json");
  }

  @Test
  void theClientOffersTheSurface() throws Exception {
    assertEquals(List.of(), problems(surface(), java()));
  }

  @Test
  void aMissingOrWrongNameFails() throws Exception {
    JsonObject s = surface();
    s.getAsJsonObject("types").addProperty("no_such_type", "");
    s.getAsJsonObject("targets").addProperty("no_such_target", "");
    s.getAsJsonObject("client").addProperty("frobnicate", "");
    s.getAsJsonObject("hold").addProperty("extend_forever", "");
    s.getAsJsonObject("admin").addProperty("force_release", "");
    JsonObject j = java();
    JsonObject dep = j.getAsJsonObject("deprecated");
    dep.addProperty("HoldfastClient.holdSeats", "HoldfastClient.hold"); // no such alias
    dep.addProperty("HoldfastClient.getCapacity", "HoldfastClient.status"); // not deprecated
    dep.addProperty("Hold.ids", "Hold.targets"); // no such replacement
    List<String> found = problems(s, j);
    for (String expected :
        List.of(
            "types.no_such_type: no class NoSuchType",
            "targets.no_such_target: no static Target.noSuchTarget",
            "client.frobnicate: no public HoldfastClient.frobnicate",
            "hold.extend_forever: no public Hold.extendForever",
            "admin.force_release: no public Admin.forceRelease",
            "deprecated HoldfastClient.holdSeats: missing",
            "deprecated HoldfastClient.getCapacity: not @Deprecated",
            "deprecated Hold.ids: its replacement Hold.targets is missing")) {
      assertTrue(found.contains(expected), expected + " not in " + found);
    }
    assertEquals(8, found.size(), found.toString());

    JsonObject unlisted = java();
    unlisted.getAsJsonObject("deprecated").remove("HoldfastClient.holdUnits");
    unlisted.getAsJsonObject("deprecated").remove("UnitsHold");
    List<String> drift = problems(surface(), unlisted);
    assertEquals(
        List.of(
            "HoldfastClient.holdUnits(String, String, List, Duration) is @Deprecated but not"
                + " listed",
            "HoldfastClient.holdUnits(String, String, List, Duration, CallOptions) is @Deprecated"
                + " but not listed",
            "UnitsHold is @Deprecated but not listed"),
        drift.stream().sorted().toList());
  }

  @Test
  void spellingFollowsTheNamingRules() throws Exception {
    JsonObject rules = surface().getAsJsonObject("naming_rules");
    Matcher m = Pattern.compile("(\\w+) -> (\\w+)").matcher(rules.toString());
    int examples = 0;
    while (m.find()) {
      String spelled =
          Character.isUpperCase(m.group(2).charAt(0)) ? pascal(m.group(1)) : camel(m.group(1));
      assertEquals(m.group(2), spelled, m.group());
      examples++;
    }
    assertTrue(examples >= 3, rules.toString());
    JsonObject java = surface().getAsJsonObject("naming").getAsJsonObject("java");
    assertEquals(
        Map.of("type", "Pascal", "member", "camel", "target", "camel"),
        java.entrySet().stream()
            .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().getAsString())));
  }

  @Test
  void aHoldOfSeatsAndOfUnitsIsOneType() {
    assertFalse(Modifier.isAbstract(Hold.class.getModifiers()));
    assertTrue(Modifier.isFinal(Hold.class.getModifiers()));
    assertTrue(AutoCloseable.class.isAssignableFrom(Hold.class));
    assertEquals(
        Target.class, methods(Hold.class, "target").findFirst().orElseThrow().getReturnType());
  }

  // ---- the check ----------------------------------------------------------------------------

  /** What the client lacks of the surface, or gets wrong, one line each. */
  static List<String> problems(JsonObject surface, JsonObject java) throws Exception {
    List<String> out = new ArrayList<>();
    JsonObject naming = surface.getAsJsonObject("naming").getAsJsonObject("java");
    JsonObject spelling = java.getAsJsonObject("spelling");
    for (String key : spelling.keySet()) {
      String[] at = key.split("\\.", 2);
      JsonObject section = surface.getAsJsonObject(at[0]);
      if (section == null || !section.has(at[1])) {
        out.add("spelling " + key + ": no such name in surface.json");
      }
    }
    Speller spell = new Speller(naming, spelling);

    for (String type : keys(surface, "types")) {
      for (String name : spell.of("types", type, "type")) {
        Class<?> c = type(name);
        if (c == null || !Modifier.isPublic(c.getModifiers())) {
          out.add("types." + type + ": no class " + name);
        } else if (c.isAnnotationPresent(Deprecated.class)) {
          out.add("types." + type + ": " + name + " is @Deprecated");
        }
      }
    }
    for (String target : keys(surface, "targets")) {
      for (String name : spell.of("targets", target, "target")) {
        boolean found =
            Arrays.stream(Target.class.getMethods())
                .anyMatch(
                    m ->
                        m.getName().equals(name)
                            && Modifier.isStatic(m.getModifiers())
                            && m.getReturnType() == Target.class
                            && !m.isAnnotationPresent(Deprecated.class));
        if (!found) {
          out.add("targets." + target + ": no static Target." + name);
        }
      }
    }
    for (String section : List.of("client", "hold", "admin")) {
      for (String owner : spell.of("types", section, "type")) {
        Class<?> c = type(owner);
        if (c == null) {
          continue; // reported with the types
        }
        for (String member : keys(surface, section)) {
          for (String name : spell.of(section, member, "member")) {
            boolean found =
                methods(c, name)
                    .anyMatch(
                        m ->
                            !Modifier.isStatic(m.getModifiers())
                                && !m.isAnnotationPresent(Deprecated.class));
            if (!found) {
              out.add(section + "." + member + ": no public " + owner + "." + name);
            }
          }
        }
      }
    }
    out.addAll(deprecatedProblems(java.getAsJsonObject("deprecated")));
    return out;
  }

  /** Each alias exists and is @Deprecated, its replacement exists; nothing deprecated unlisted. */
  private static List<String> deprecatedProblems(JsonObject deprecated) throws Exception {
    List<String> out = new ArrayList<>();
    for (Map.Entry<String, JsonElement> e : deprecated.entrySet()) {
      String alias = e.getKey();
      String replacement = e.getValue().getAsString();
      List<Deprecation> found = resolve(alias);
      if (found.isEmpty()) {
        out.add("deprecated " + alias + ": missing");
      } else if (!found.stream().allMatch(Deprecation::deprecated)) {
        out.add("deprecated " + alias + ": not @Deprecated");
      }
      if (resolve(replacement).stream().noneMatch(d -> !d.deprecated())) {
        out.add("deprecated " + alias + ": its replacement " + replacement + " is missing");
      }
    }
    for (String listedOrNot : deprecatedInTheCode()) {
      if (!deprecated.has(listedOrNot)
          && !deprecated.has(listedOrNot.replaceFirst("\\(.*", ""))
          && !coveredByDeprecatedClass(listedOrNot, deprecated)) {
        out.add(listedOrNot + " is @Deprecated but not listed");
      }
    }
    return out;
  }

  /** A class, or methods of a class, named as java.json names them; and whether deprecated. */
  private record Deprecation(String what, boolean deprecated) {}

  private static List<Deprecation> resolve(String name) {
    Class<?> c = type(name);
    if (c != null) {
      return List.of(new Deprecation(name, c.isAnnotationPresent(Deprecated.class)));
    }
    Matcher m = Pattern.compile("([\\w.]+)\\.(\\w+)(?:\\((.*)\\))?").matcher(name);
    if (!m.matches() || type(m.group(1)) == null) {
      return List.of();
    }
    Stream<Method> methods = methods(type(m.group(1)), m.group(2));
    if (m.group(3) != null) {
      String params = m.group(3);
      methods = methods.filter(x -> params(x).equals(params));
    }
    return methods
        .map(x -> new Deprecation(name, x.isAnnotationPresent(Deprecated.class)))
        .toList();
  }

  /** Every public @Deprecated class, and method of a public class, of the package. */
  private static List<String> deprecatedInTheCode() throws IOException, URISyntaxException {
    Path classes =
        Path.of(HoldfastClient.class.getProtectionDomain().getCodeSource().getLocation().toURI())
            .resolve("dev/holdfast/client");
    List<String> out = new ArrayList<>();
    try (Stream<Path> files = Files.list(classes)) {
      for (Path f : files.sorted().toList()) {
        String file = f.getFileName().toString();
        if (!file.endsWith(".class")) {
          continue;
        }
        String name = file.substring(0, file.length() - ".class".length()).replace('$', '.');
        Class<?> c = type(name);
        if (c == null || !Modifier.isPublic(c.getModifiers())) {
          continue;
        }
        if (c.isAnnotationPresent(Deprecated.class)) {
          out.add(name);
          continue;
        }
        for (Method m : c.getMethods()) {
          if (m.isAnnotationPresent(Deprecated.class)
              && m.getDeclaringClass().getName().startsWith(PACKAGE)) {
            out.add(name + "." + m.getName() + "(" + params(m) + ")");
          }
        }
      }
    }
    return out;
  }

  private static boolean coveredByDeprecatedClass(String member, JsonObject deprecated) {
    String owner = member.replaceFirst("\\.\\w+\\(.*", "");
    return !owner.equals(member) && deprecated.has(owner);
  }

  private static String params(Method m) {
    return Arrays.stream(m.getParameterTypes())
        .map(Class::getSimpleName)
        .collect(Collectors.joining(", "));
  }

  /** Public methods named {@code name}, inherited ones included. */
  private static Stream<Method> methods(Class<?> c, String name) {
    return Arrays.stream(c.getMethods()).filter(m -> m.getName().equals(name));
  }

  /** The class {@code Outer} or {@code Outer.Inner} of the package, or null. */
  private static Class<?> type(String name) {
    try {
      return Class.forName(PACKAGE + name.replace('.', '$'));
    } catch (ClassNotFoundException e) {
      return null;
    }
  }

  private static List<String> keys(JsonObject surface, String section) {
    return surface.getAsJsonObject(section).keySet().stream()
        .filter(k -> !k.startsWith("$"))
        .toList();
  }

  /** surface.json's canonical names in the Java spelling: java.json's, else the rule's. */
  private record Speller(JsonObject naming, JsonObject spelling) {
    List<String> of(String section, String key, String kind) {
      JsonElement own = spelling.get(section + "." + key);
      if (own != null) {
        List<String> names = new ArrayList<>();
        own.getAsJsonArray().forEach(x -> names.add(x.getAsString()));
        return names;
      }
      String rule = naming.get(kind).getAsString();
      return List.of(
          switch (rule) {
            case "Pascal" -> pascal(key);
            case "camel" -> camel(key);
            case "snake" -> key;
            default -> throw new IllegalArgumentException("naming rule " + rule);
          });
    }
  }

  static String pascal(String snake) {
    StringBuilder b = new StringBuilder();
    for (String w : snake.split("_")) {
      b.append(Character.toUpperCase(w.charAt(0))).append(w.substring(1));
    }
    return b.toString();
  }

  static String camel(String snake) {
    String p = pascal(snake);
    return Character.toLowerCase(p.charAt(0)) + p.substring(1);
  }
}
