package dev.holdfast.client;

import java.nio.file.Files;
import java.nio.file.Path;

/** Finds the repository root (the directory holding protos/). */
final class RepoRoot {
  private RepoRoot() {}

  static Path get() {
    String prop = System.getProperty("holdfast.repoRoot");
    Path dir = (prop != null ? Path.of(prop) : Path.of("")).toAbsolutePath().normalize();
    for (Path d = dir; d != null; d = d.getParent()) {
      if (Files.exists(d.resolve("protos/holdfast/v1/holdfast.proto"))) {
        return d;
      }
    }
    throw new IllegalStateException("cannot find protos/holdfast/v1/holdfast.proto above " + dir);
  }
}
