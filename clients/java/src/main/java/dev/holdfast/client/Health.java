package dev.holdfast.client;

import dev.holdfast.v1.HealthResponse;

/**
 * The answer of {@link HoldfastClient#health()}.
 *
 * @param live the daemon's loop is running
 * @param ready Redis connected with the script library loaded (and PostgreSQL, where configured,
 *     reachable); not draining
 * @param version the daemon's version
 * @param redis {@code "up"} or {@code "down"}
 * @param postgres {@code "up"}, {@code "down"} or {@code "disabled"}
 * @param scriptPath the active call path: {@code "fcall"}, {@code "evalsha"} or {@code "eval"}
 * @param releasePath {@code "script"} or {@code "delex"}
 * @param library the Redis Functions library, e.g. {@code "holdfast_v1"}
 * @param connections client connections open
 * @param inFlight requests in flight
 * @param draining the daemon is shutting down
 */
public record Health(
    boolean live,
    boolean ready,
    String version,
    String redis,
    String postgres,
    String scriptPath,
    String releasePath,
    String library,
    int connections,
    int inFlight,
    boolean draining) {
  static Health fromProto(HealthResponse h) {
    return new Health(
        h.getLive(),
        h.getReady(),
        h.getVersion(),
        h.getRedis(),
        h.getPostgres(),
        h.getScriptPath(),
        h.getReleasePath(),
        h.getLibrary(),
        h.getConnections(),
        h.getInFlight(),
        h.getDraining());
  }
}
