// Wire framing: 4-byte big-endian length, then one protobuf envelope. No I/O.

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import {
  type Request,
  RequestSchema,
  type Response,
  ResponseSchema,
} from "./gen/holdfast/v1/holdfast_pb.js";

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

/** One call's Request envelope, framed. */
export function encodeCall(
  id: number,
  correlationId: string,
  timeoutMs: number,
  traceparent: string,
  method: NonNullable<Request["method"]["case"]>,
  value: object,
): Buffer {
  const req = create(RequestSchema, {
    id: BigInt(id),
    correlationId,
    timeoutMs,
    traceparent,
    method: { case: method, value } as Request["method"],
  });
  return encodeRequest(req);
}

export function decodeResponse(body: Uint8Array): Response {
  try {
    return fromBinary(ResponseSchema, body);
  } catch (err) {
    throw new FrameError(`undecodable response frame (${body.length} bytes): ${String(err)}`);
  }
}

/** Collects stream chunks and cuts complete frame bodies out of them. */
export class FrameReader {
  /** An incomplete frame's bytes so far (copies), and how many it needs at least. */
  private parts: Buffer[] = [];
  private partsLen = 0;
  private need = 4;

  constructor(private readonly maxFrame = MAX_RESPONSE_FRAME) {}

  /** The complete frame bodies that `chunk` completes, in order. */
  feed(chunk: Uint8Array): Buffer[] {
    const out: Buffer[] = [];
    this.each(chunk, (body) => out.push(body));
    return out;
  }

  /**
   * Calls `onFrame` with each frame body that `chunk` completes, in order.
   * A body is a view into `chunk` (no copy) unless the frame was split
   * across chunks; it is valid until the caller reuses `chunk`.
   */
  each(chunk: Uint8Array, onFrame: (body: Buffer) => void): void {
    let buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.partsLen > 0) {
      if (this.partsLen + buf.length < this.need) {
        this.parts.push(Buffer.from(buf)); // the caller may reuse its chunk
        this.partsLen += buf.length;
        return;
      }
      this.parts.push(buf);
      buf = Buffer.concat(this.parts, this.partsLen + buf.length);
      this.parts = [];
      this.partsLen = 0;
      this.need = 4;
    }
    const len = buf.length;
    let off = 0;
    while (len - off >= 4) {
      const n = buf.readUInt32BE(off);
      if (n > this.maxFrame) {
        throw new FrameError(`frame of ${n} bytes exceeds the ${this.maxFrame}-byte limit`);
      }
      if (len - off - 4 < n) break;
      const body = buf.subarray(off + 4, off + 4 + n);
      off += 4 + n;
      onFrame(body);
    }
    if (off < len) {
      // Copy the tail so the consumed bytes can be collected.
      const rest = Buffer.from(buf.subarray(off));
      this.parts = [rest];
      this.partsLen = rest.length;
      this.need = rest.length >= 4 ? 4 + rest.readUInt32BE(0) : 4;
    }
  }

  get pendingBytes(): number {
    return this.partsLen;
  }
}
