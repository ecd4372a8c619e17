// One Unix-socket connection: writes frames, matches responses to requests by id.
//
// The hot path is kept cheap (issue 15): the frames of every call made in one
// tick go out in one socket write (the daemon then reads them in one go and
// batches their Redis work), frames are cut out of each read without copying,
// and deadlines are kept by one timer per connection, armed for the earliest
// deadline, instead of one timer per call.

import * as net from "node:net";

import { Code, type Response } from "./gen/holdfast/v1/holdfast_pb.js";
import { ClientClosedError, HoldfastError } from "./errors.js";
import { FrameError, FrameReader, decodeResponse } from "./frame.js";
import { SessionHolds, isSessionEvent } from "./session.js";

/** Response ids above this cannot be ours: the client's ids are numbers (1 .. 2^53 - 1). */
const MAX_ID = BigInt(Number.MAX_SAFE_INTEGER);

/** One request waiting for its answer. */
class Pending {
  /** The write batch carrying the frame (see Connection.writtenBatch). */
  batch = 0;
  onAbort: (() => void) | undefined = undefined;

  constructor(
    readonly id: number,
    readonly deadline: number,
    readonly timeoutMs: number,
    readonly resolve: (resp: Response) => void,
    readonly reject: (err: Error) => void,
    readonly signal: AbortSignal | undefined,
  ) {}
}

/** Thrown by send() when the frame certainly did not reach the daemon. */
export class UnsentError extends HoldfastError {}

/** Once broken a Connection stays broken; the client opens a new one. */
export class Connection {
  private readonly pending = new Map<number, Pending>();
  private readonly reader = new FrameReader();
  private brokenBy: HoldfastError | null = null;
  /** Frames of this tick, not yet handed to the socket. */
  private out: Uint8Array[] = [];
  private outBytes = 0;
  /** The batch being collected; frames of batch <= writtenBatch reached the kernel whole. */
  private batch = 1;
  private writtenBatch = 0;
  private flushQueued = false;
  /** The one deadline timer, due at timerAt (performance.now() ms). */
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
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

  /** Calls waiting for an answer (for tests and diagnostics). */
  get waiting(): number {
    return this.pending.size;
  }

  /**
   * Queue the request frame (written with the rest of this tick's frames);
   * the promise settles with its response, or rejects with DEADLINE_EXCEEDED
   * at `deadline` (performance.now() ms; "no answer within `timeoutMs` ms"),
   * or with `signal.reason` when aborted. `id` is the frame's request id.
   */
  send(id: number, frame: Uint8Array, deadline: number, timeoutMs: number, signal?: AbortSignal): Promise<Response> {
    if (this.brokenBy !== null || this.sock.destroyed || !this.sock.writable) {
      throw new UnsentError(Code.UNAVAILABLE, "connection to holdfastd is closed");
    }
    if (signal?.aborted) throw signal.reason; // nothing queued
    let p!: Pending;
    const promise = new Promise<Response>((resolve, reject) => {
      p = new Pending(id, deadline, timeoutMs, resolve, reject, signal);
    });
    p.batch = this.batch;
    this.pending.set(id, p);
    if (this.pending.size === 1) this.sock.ref(); // keep the process alive while calls are waiting
    this.out.push(frame);
    this.outBytes += frame.length;
    if (!this.flushQueued) {
      this.flushQueued = true;
      // After the microtasks of this tick: every call they make joins the batch.
      process.nextTick(flushConnection, this);
    }
    if (deadline < this.timerAt) this.arm(deadline);
    if (signal !== undefined) {
      p.onAbort = () => this.settle(p)?.reject(signal.reason);
      signal.addEventListener("abort", p.onAbort, { once: true });
    }
    return promise;
  }

  /** Write this tick's frames in one go. */
  flush(): void {
    this.flushQueued = false;
    const frames = this.out;
    if (frames.length === 0 || this.brokenBy !== null) return;
    const data = frames.length === 1 ? frames[0] : Buffer.concat(frames, this.outBytes);
    this.out = [];
    this.outBytes = 0;
    const batch = this.batch++;
    // The socket buffers the whole batch, so a deadline never leaves half a
    // frame on the wire. A failed write (EPIPE: the daemon closed first)
    // breaks the connection; see fail() for what its callers are told.
    this.sock.write(data, (err) => {
      if (err) this.fail(new HoldfastError(Code.UNAVAILABLE, `connection to holdfastd lost: ${err.message}`));
      else if (batch > this.writtenBatch) this.writtenBatch = batch;
    });
  }

  /** Stop waiting for `id` (its deadline passed, or its caller gave up); a late answer is dropped. */
  forget(id: number): void {
    const p = this.pending.get(id);
    if (p !== undefined) this.settle(p);
  }

  /** Take `p` out of the waiting calls; undefined when it was settled before. */
  private settle(p: Pending): Pending | undefined {
    if (this.pending.get(p.id) !== p) return undefined;
    this.pending.delete(p.id);
    if (this.pending.size === 0 && this.brokenBy === null) this.sock.unref();
    if (p.onAbort !== undefined) p.signal!.removeEventListener("abort", p.onAbort);
    return p;
  }

  /** Arm the deadline timer for `at` (performance.now() ms), earlier than it is armed for. */
  private arm(at: number): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(expireConnection, Math.max(1, Math.ceil(at - performance.now())), this);
    this.timer.unref(); // the socket is ref'd while calls wait
  }

  /** Fail the calls whose deadline passed; re-arm for the earliest left. */
  expire(): void {
    this.timer = null;
    this.timerAt = Infinity;
    const now = performance.now();
    let next = Infinity;
    for (const p of this.pending.values()) {
      if (p.deadline <= now) {
        this.settle(p);
        p.reject(new HoldfastError(Code.DEADLINE_EXCEEDED, `no answer from holdfastd within ${p.timeoutMs} ms`));
      } else if (p.deadline < next) next = p.deadline;
    }
    if (next !== Infinity && this.brokenBy === null) this.arm(next);
  }

  private onData(chunk: Buffer): void {
    try {
      this.reader.each(chunk, this.onFrame);
    } catch (err) {
      if (err instanceof HoldfastError) this.fail(err);
      else if (err instanceof FrameError) this.fail(new HoldfastError(Code.UNAVAILABLE, err.message));
      else throw err;
    }
  }

  private readonly onFrame = (body: Uint8Array): void => {
    if (this.brokenBy === null) this.dispatch(decodeResponse(body));
  };

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
    if (resp.id > MAX_ID) return; // not an id of ours
    const p = this.pending.get(Number(resp.id));
    if (p === undefined) return; // its caller gave up (deadline, abort)
    this.settle(p);
    p.resolve(resp);
  }

  /** Break the connection and fail every call waiting on it. */
  fail(err: HoldfastError): void {
    if (this.brokenBy === null) this.brokenBy = err;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = Infinity;
    this.out = [];
    this.outBytes = 0;
    const waiting = [...this.pending.values()];
    for (const p of waiting) this.settle(p);
    for (const p of waiting) {
      if (err instanceof ClientClosedError) p.reject(new ClientClosedError(err.message));
      // Never fully written: the daemon processes only whole frames, so it
      // did not see this request and the client may send it again.
      else if (p.batch > this.writtenBatch) p.reject(new UnsentError(Code.UNAVAILABLE, err.message));
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

// Module-level callbacks: no closure per tick or per timer.
function flushConnection(conn: Connection): void {
  conn.flush();
}
function expireConnection(conn: Connection): void {
  conn.expire();
}
