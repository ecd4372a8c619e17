// One Unix-socket connection: writes frames, matches responses to requests by id.

import * as net from "node:net";

import { Code, type Response } from "./gen/holdfast/v1/holdfast_pb.js";
import { ClientClosedError, HoldfastError } from "./errors.js";
import { FrameError, FrameReader, decodeResponse } from "./frame.js";
import { SessionHolds, isSessionEvent } from "./session.js";

interface Pending {
  resolve: (resp: Response) => void;
  reject: (err: HoldfastError) => void;
  /** The whole frame reached the kernel; until then the daemon cannot have acted on it. */
  written: boolean;
}

/** Thrown by send() when the frame certainly did not reach the daemon. */
export class UnsentError extends HoldfastError {}

/** Once broken a Connection stays broken; the client opens a new one. */
export class Connection {
  private readonly pending = new Map<bigint, Pending>();
  private readonly reader = new FrameReader();
  private brokenBy: HoldfastError | null = null;
  /** The session holds taken on this connection (docs/sessions.md). */
  readonly sessions = new SessionHolds();

  private constructor(private readonly sock: net.Socket) {
    sock.on("data", (chunk: Buffer) => this.onData(chunk));
    sock.on("error", (err: NodeJS.ErrnoException) =>
      this.fail(new HoldfastError(Code.UNAVAILABLE, `connection to holdfastd lost: ${err.message}`)),
    );
    sock.on("close", () => this.fail(new HoldfastError(Code.UNAVAILABLE, "holdfastd closed the connection")));
    sock.unref(); // an idle client must not keep the process alive
  }

  static open(path: string, timeoutMs: number): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const sock = net.createConnection({ path });
      const timer = setTimeout(() => {
        sock.destroy();
        reject(Object.assign(new Error(`connect timed out after ${timeoutMs} ms`), { code: "ETIMEDOUT" }));
      }, timeoutMs);
      sock.once("error", (err) => {
        clearTimeout(timer);
        sock.destroy();
        reject(err);
      });
      sock.once("connect", () => {
        clearTimeout(timer);
        sock.removeAllListeners("error");
        resolve(new Connection(sock));
      });
    });
  }

  get broken(): boolean {
    return this.brokenBy !== null;
  }

  /** Write the request frame; the promise settles with its response. */
  send(id: bigint, frame: Uint8Array): Promise<Response> {
    if (this.brokenBy !== null || this.sock.destroyed || !this.sock.writable) {
      throw new UnsentError(Code.UNAVAILABLE, "connection to holdfastd is closed");
    }
    let entry!: Pending;
    const p = new Promise<Response>((resolve, reject) => {
      entry = { resolve, reject, written: false };
      this.pending.set(id, entry);
    });
    this.sock.ref(); // keep the process alive while calls are waiting
    // The socket buffers the whole frame, so a deadline never leaves half a
    // frame on the wire. A failed write (EPIPE: the daemon closed first)
    // breaks the connection; see fail() for what its callers are told.
    this.sock.write(frame, (err) => {
      if (err) this.fail(new HoldfastError(Code.UNAVAILABLE, `connection to holdfastd lost: ${err.message}`));
      else entry.written = true;
    });
    return p;
  }

  /** Stop waiting for `id` (its deadline passed); a late answer is dropped. */
  forget(id: bigint): void {
    if (this.pending.delete(id) && this.pending.size === 0) this.sock.unref();
  }

  private onData(chunk: Buffer): void {
    let bodies: Buffer[];
    try {
      bodies = this.reader.feed(chunk);
      for (const body of bodies) this.dispatch(decodeResponse(body));
    } catch (err) {
      if (err instanceof HoldfastError) this.fail(err);
      else if (err instanceof FrameError) this.fail(new HoldfastError(Code.UNAVAILABLE, err.message));
      else throw err;
    }
  }

  private dispatch(resp: Response): void {
    if (isSessionEvent(resp)) {
      // Unsolicited: session holds of this connection were lost; the
      // stream stays usable.
      this.sessions.onEvent(resp.result.value);
      return;
    }
    if (resp.id === 0n) {
      // Any other id-0 frame: the daemon could not read one of our frames and closes the
      // connection; every request on it shares that fate.
      throw new HoldfastError(resp.code, resp.message || "daemon rejected a frame", {
        field: resp.error?.field,
        correlationId: resp.correlationId,
      });
    }
    const p = this.pending.get(resp.id);
    if (p === undefined) return; // its caller gave up on the deadline
    this.forget(resp.id);
    p.resolve(resp);
  }

  /** Break the connection and fail every call waiting on it. */
  fail(err: HoldfastError): void {
    if (this.brokenBy === null) this.brokenBy = err;
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const p of waiting) {
      if (err instanceof ClientClosedError) p.reject(new ClientClosedError(err.message));
      // Never fully written: the daemon processes only whole frames, so it
      // did not see this request and the client may send it again.
      else if (!p.written) p.reject(new UnsentError(Code.UNAVAILABLE, err.message));
      else if (err.code === Code.UNAVAILABLE) {
        p.reject(new HoldfastError(err.code, `${err.message} (the outcome of this call is unknown)`));
      } else p.reject(new HoldfastError(err.code, err.message, { field: err.field }));
    }
    this.sock.destroy();
    // The daemon releases a closed connection's session holds (a dead
    // daemon's expire with their session TTL): none is ours any more.
    this.sessions.connectionEnded(err);
  }

  close(): void {
    this.fail(new ClientClosedError());
  }
}
