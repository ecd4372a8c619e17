// A scripted stand-in for holdfastd's socket, for transport tests only: it
// produces on demand what a real daemon does not (answers out of order, a
// silent peer, an id-0 rejection). Behaviour against Redis/PostgreSQL is
// tested against the real daemon in live.test.ts.

import { existsSync, unlinkSync } from "node:fs";
import * as net from "node:net";

import { create, fromBinary } from "@bufbuild/protobuf";
import { encodeFrame } from "../src/frame.js";
import {
  CancelResponseSchema,
  ClaimSchema,
  Code,
  ConfirmResponseSchema,
  ExtendResponseSchema,
  GetCapacityResponseSchema,
  HealthResponseSchema,
  HoldResponseSchema,
  PoolCapacitySchema,
  PoolStatusSchema,
  ReleaseResponseSchema,
  RequestSchema,
  ResourceState,
  ResponseSchema,
  SessionEventSchema,
  SessionHoldLostSchema,
  SetCapacityResponseSchema,
  StatusResponseSchema,
  type Request,
  type Response,
} from "../src/gen/holdfast/v1/holdfast_pb.js";

export type Handler = (req: Request) => Response | Response[] | null;

export function okFor(req: Request): Response {
  const resp = create(ResponseSchema, { id: req.id, correlationId: req.correlationId, code: Code.OK });
  const m = req.method;
  if (m.case === "hold") {
    resp.result = { case: "hold", value: create(HoldResponseSchema, { token: "1.fake", fence: 1n, ttlMs: m.value.ttlMs || (m.value.session ? 5000 : 60000) }) };
  } else if (m.case === "release") {
    resp.result = { case: "release", value: create(ReleaseResponseSchema, { released: m.value.ids.length + m.value.pools.length }) };
  } else if (m.case === "extend") {
    resp.result = { case: "extend", value: create(ExtendResponseSchema, { ttlMs: m.value.ttlMs }) };
  } else if (m.case === "status") {
    const resources = m.value.ids.map((id) => ({ id, state: ResourceState.FREE }));
    const pools = m.value.pools.map((pool) =>
      create(PoolStatusSchema, { pool, capacity: 5000n, sold: 4990n, held: 7n, free: 3n, owned: m.value.token ? 2 : 0, ttlMs: m.value.token ? 118250n : 0n }),
    );
    resp.result = { case: "status", value: create(StatusResponseSchema, { resources, pools }) };
  } else if (m.case === "confirm") {
    const claims = m.value.ids.map((resourceId) =>
      create(ClaimSchema, { resourceId, fence: 1n, reference: m.value.reference, confirmedAtUnixMs: 1764547200000n }),
    );
    const units = m.value.units.map((u) => ({ pool: u.pool, count: u.count }));
    resp.result = {
      case: "confirm",
      value: create(ConfirmResponseSchema, { fence: 1n, claims, units, confirmedAtUnixMs: units.length ? 1764412399456n : 0n }),
    };
  } else if (m.case === "cancel") {
    const units = m.value.units.map((u) => ({ pool: u.pool, count: u.count }));
    const cancelled = m.value.ids.length + units.reduce((n, u) => n + u.count, 0);
    resp.result = { case: "cancel", value: create(CancelResponseSchema, { cancelled, units }) };
  } else if (m.case === "setCapacity") {
    const pool = create(PoolCapacitySchema, { pool: m.value.pool, capacity: m.value.capacity, sold: 4990n, partitionDefault: false });
    resp.result = { case: "setCapacity", value: create(SetCapacityResponseSchema, { pool }) };
  } else if (m.case === "getCapacity") {
    const pools = m.value.pools.map((pool, i) =>
      create(PoolCapacitySchema, { pool, capacity: i === 0 ? 5000n : 1n, sold: i === 0 ? 4990n : 1n, partitionDefault: i > 0 }),
    );
    resp.result = { case: "getCapacity", value: create(GetCapacityResponseSchema, { pools, defaultCapacity: 1n }) };
  } else if (m.case === "health") {
    resp.result = { case: "health", value: create(HealthResponseSchema, { live: true, ready: true }) };
  }
  return resp;
}

/** The unsolicited id-0 frame that reports session holds lost. */
export function sessionEvent(...lost: { namespace: string; partition: string; fence: bigint; reason: Code; resourceId?: string; ids?: string[]; message?: string }[]): Response {
  return create(ResponseSchema, {
    id: 0n,
    code: Code.OK,
    message: "session holds were lost",
    result: { case: "sessionEvent", value: create(SessionEventSchema, { lost: lost.map((l) => create(SessionHoldLostSchema, { message: "lost", ...l })) }) },
  });
}

export class FakeDaemon {
  handler: Handler = okFor;
  readonly requests: Request[] = [];
  connections = 0;
  /** Frames in each read of request bytes (one entry per 'data' event that completed any). */
  readonly framesPerRead: number[] = [];
  /**
   * How the answers to one read go out: "each" one write per answer,
   * "batch" all in one write, "split" all in one buffer written in pieces of
   * 1..7 bytes, a few ms apart (so the client reads them in many pieces).
   */
  answers: "each" | "batch" | "split" = "each";
  private server: net.Server | null = null;
  private readonly socks = new Set<net.Socket>();

  constructor(readonly path: string) {}

  async start(): Promise<this> {
    if (existsSync(this.path)) unlinkSync(this.path);
    const server = net.createServer((sock) => this.serve(sock));
    await new Promise<void>((resolve) => server.listen(this.path, resolve));
    this.server = server;
    return this;
  }

  /** Like a daemon exiting: close the listener and every connection. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.socks) s.destroy();
    this.socks.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  sendRaw(data: Uint8Array): void {
    for (const s of this.socks) s.write(data);
  }

  /** Frames `responses` and sends them to every connection in one write. */
  sendFrames(responses: Response[]): void {
    this.sendRaw(Buffer.concat(responses.map((r) => encodeFrame(ResponseSchema, r))));
  }

  private write(sock: net.Socket, frames: Buffer[]): void {
    if (frames.length === 0) return;
    if (this.answers === "each") {
      for (const f of frames) sock.write(f);
      return;
    }
    const data = Buffer.concat(frames);
    if (this.answers === "batch") {
      sock.write(data);
      return;
    }
    const pieces: Buffer[] = [];
    for (let off = 0, k = 0; off < data.length; k++) {
      const n = 1 + (k % 7);
      pieces.push(data.subarray(off, off + n));
      off += n;
    }
    const next = () => {
      const piece = pieces.shift();
      if (piece === undefined || sock.destroyed) return;
      sock.write(piece);
      setTimeout(next, 1);
    };
    next();
  }

  private serve(sock: net.Socket): void {
    this.connections++;
    this.socks.add(sock);
    let buf = Buffer.alloc(0);
    sock.on("error", () => {});
    sock.on("close", () => this.socks.delete(sock));
    sock.on("data", (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      const out: Buffer[] = [];
      let frames = 0;
      while (buf.length >= 4) {
        const n = buf.readUInt32BE(0);
        if (buf.length < 4 + n) break;
        const req = fromBinary(RequestSchema, buf.subarray(4, 4 + n));
        buf = buf.subarray(4 + n);
        this.requests.push(req);
        frames++;
        const answer = this.handler(req);
        for (const resp of answer === null ? [] : Array.isArray(answer) ? answer : [answer]) {
          out.push(encodeFrame(ResponseSchema, resp));
        }
      }
      if (frames > 0) this.framesPerRead.push(frames);
      this.write(sock, out);
    });
  }
}
