package dev.holdfast.client;

import dev.holdfast.v1.ResourceState;
import java.time.Duration;

/**
 * One resource in a Status answer. Diagnostic only: it may be stale when it arrives and grants
 * nothing.
 *
 * @param id the resource id
 * @param state free, held or confirmed
 * @param ttl remaining time to live: zero when free, negative when the key has no expiry
 * @param owned true when the hold asked about ({@link Hold#status()}) owns it
 */
public record ResourceStatus(String id, ResourceState state, Duration ttl, boolean owned) {
  static ResourceStatus fromProto(dev.holdfast.v1.ResourceStatus s) {
    return new ResourceStatus(
        s.getId(), s.getState(), Duration.ofMillis(s.getTtlMs()), s.getOwned());
  }
}
