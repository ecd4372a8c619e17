// Session holds (docs/sessions.md): the holds bound to one connection, and the
// daemon's unsolicited reports about them.

import { Code, type Response, type SessionEvent } from "./gen/holdfast/v1/holdfast_pb.js";
import { HoldfastError } from "./errors.js";

/** The method a SessionHolds calls on a hold it reports lost (not part of the public API). */
export const SESSION_LOST: unique symbol = Symbol("holdfast.sessionLost");

/** What SessionHolds needs of a hold: which hold it is, and how to tell it. */
export interface SessionMember {
  readonly namespace: string;
  readonly partition: string;
  readonly fence: bigint;
  [SESSION_LOST](err: HoldfastError): void;
}

/**
 * An unsolicited id-0 frame about the connection's session holds. Any other
 * id-0 frame is the daemon's fatal answer to the stream (docs/protocol.md).
 */
export function isSessionEvent(resp: Response): resp is Response & { result: { case: "sessionEvent"; value: SessionEvent } } {
  return resp.id === 0n && resp.result.case === "sessionEvent";
}

function keyOf(namespace: string, partition: string, fence: bigint): string {
  return JSON.stringify([namespace, partition, fence.toString()]);
}

/**
 * The session holds taken on one connection, by (namespace, partition,
 * fence), so that the daemon's SessionEvent and the connection's end reach
 * the hold objects. A hold stays here until it is released, confirmed or
 * reported lost (held strongly: its onLost callback runs even if the caller
 * kept no reference to it).
 */
export class SessionHolds {
  /**
   * Reports that came before their hold was registered are kept (the reader
   * may see an event before the caller has taken the answer that granted the
   * hold), up to this many.
   */
  static readonly EARLY_MAX = 1024;

  readonly #holds = new Map<string, SessionMember>();
  readonly #early = new Map<string, HoldfastError>();
  #ended: HoldfastError | null = null;

  /** Holds currently registered (for tests and diagnostics). */
  get size(): number {
    return this.#holds.size;
  }

  register(hold: SessionMember): void {
    const key = keyOf(hold.namespace, hold.partition, hold.fence);
    const err = this.#early.get(key) ?? this.#ended;
    this.#early.delete(key);
    if (err === null) this.#holds.set(key, hold);
    else hold[SESSION_LOST](err);
  }

  forget(hold: SessionMember): void {
    const key = keyOf(hold.namespace, hold.partition, hold.fence);
    if (this.#holds.get(key) === hold) this.#holds.delete(key);
  }

  onEvent(event: SessionEvent): void {
    const found: [SessionMember, HoldfastError][] = [];
    for (const lost of event.lost) {
      const key = keyOf(lost.namespace, lost.partition, lost.fence);
      const err = new HoldfastError(lost.reason, `session hold lost: ${lost.message || Code[lost.reason] || lost.reason}`, {
        resourceId: lost.resourceId,
      });
      const hold = this.#holds.get(key);
      if (hold !== undefined) {
        this.#holds.delete(key);
        found.push([hold, err]);
      } else {
        this.#early.delete(key);
        this.#early.set(key, err);
        while (this.#early.size > SessionHolds.EARLY_MAX) this.#early.delete(this.#early.keys().next().value!);
      }
    }
    for (const [hold, err] of found) hold[SESSION_LOST](err);
  }

  /**
   * The connection ended: the daemon released its session holds (or, if the
   * daemon died, they expire with their session TTL). Every hold registered,
   * now or later, is lost.
   */
  connectionEnded(why: HoldfastError): void {
    const err = new HoldfastError(Code.UNAVAILABLE, `session hold lost: its connection to holdfastd ended (${why.message})`);
    this.#ended ??= err;
    const holds = [...this.#holds.values()];
    this.#holds.clear();
    this.#early.clear();
    for (const hold of holds) hold[SESSION_LOST](this.#ended);
  }
}
