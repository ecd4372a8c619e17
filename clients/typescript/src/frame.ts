// Wire framing: 4-byte big-endian length, then one protobuf envelope. No I/O.

import { fromBinary, toBinary } from "@bufbuild/protobuf";
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { ResponseSchema, type Request, RequestSchema, type Response } from "./gen/holdfast/v1/holdfast_pb.js";

/** Responses are small; a far larger length means the stream is out of step. */
export const MAX_RESPONSE_FRAME = 16 * 1024 * 1024;

export class FrameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FrameError";
  }
}

/** Frame any message (Request or Response) of the given schema. */
export function encodeFrame<D extends DescMessage>(schema: D, msg: MessageShape<D>): Buffer {
  const body = toBinary(schema, msg);
  const frame = Buffer.allocUnsafe(4 + body.length);
  frame.writeUInt32BE(body.length, 0);
  frame.set(body, 4);
  return frame;
}

export function encodeRequest(req: Request): Buffer {
  return encodeFrame(RequestSchema, req);
}

export function decodeResponse(body: Uint8Array): Response {
  try {
    return fromBinary(ResponseSchema, body);
  } catch (err) {
    throw new FrameError(`undecodable response frame (${body.length} bytes): ${String(err)}`);
  }
}

/** Collects stream chunks and returns complete frame bodies. */
export class FrameReader {
  private buf: Buffer = Buffer.alloc(0);

  constructor(private readonly maxFrame = MAX_RESPONSE_FRAME) {}

  feed(chunk: Uint8Array): Buffer[] {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : Buffer.from(chunk);
    const out: Buffer[] = [];
    let off = 0;
    while (this.buf.length - off >= 4) {
      const n = this.buf.readUInt32BE(off);
      if (n > this.maxFrame) {
        throw new FrameError(`frame of ${n} bytes exceeds the ${this.maxFrame}-byte limit`);
      }
      if (this.buf.length - off - 4 < n) break;
      out.push(this.buf.subarray(off + 4, off + 4 + n));
      off += 4 + n;
    }
    // Copy the tail so the consumed bytes can be collected.
    this.buf = off === this.buf.length ? Buffer.alloc(0) : Buffer.from(this.buf.subarray(off));
    return out;
  }

  get pendingBytes(): number {
    return this.buf.length;
  }
}
