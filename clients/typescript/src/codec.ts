// A hand-written codec for the hot messages (issue 15): Request frames of
// hold, extend and release, and Responses whose result is one of those (or
// none). Byte for byte what @bufbuild/protobuf writes (fields in number
// order, proto3 defaults left out), and the same message objects it reads;
// anything else, or anything unusual (a value out of range, an unknown or
// repeated field), goes through @bufbuild/protobuf as before. Tested against
// it in test/codec.test.ts.

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { DescMessage } from "@bufbuild/protobuf";
import {
  ExtendRequestSchema,
  HoldRequestSchema,
  PoolTakeSchema,
  ReleaseRequestSchema,
  RequestSchema,
  ResponseSchema,
  SegmentSchema,
  type Request,
  type Response,
} from "./gen/holdfast/v1/holdfast_pb.js";

type Method = NonNullable<Request["method"]["case"]>;

const MAX_UINT32 = 0xffffffff;
/** Field numbers of the Request's method oneof. */
const METHOD_FIELD: Partial<Record<Method, number>> = { hold: 10, extend: 11, release: 12 };

/**
 * The fields the encoder writes, by message. Should the generated code
 * differ (a field added to the .proto, and so perhaps passed by the client),
 * every request goes through @bufbuild/protobuf until this codec learns it:
 * a field is never dropped. (The decoder needs no such list: any field it
 * does not know sends the whole response to @bufbuild/protobuf.)
 */
const ENCODED: [DescMessage, string][] = [
  [RequestSchema, "1:id 2:correlationId 3:timeoutMs 4:traceparent 10:hold 11:extend 12:release 13:confirm 14:cancel 15:status 16:health 17:metrics 18:setCapacity 19:getCapacity"],
  [HoldRequestSchema, "1:namespace 2:partition 3:ids 4:ttlMs 5:units 15:segment 16:session 17:waitMs"],
  [ExtendRequestSchema, "1:namespace 2:partition 3:ids 4:token 5:ttlMs 6:pools 15:segment"],
  [ReleaseRequestSchema, "1:namespace 2:partition 3:ids 4:token 5:pools 15:segment"],
  [SegmentSchema, "1:fromStop 2:toStop"],
  [PoolTakeSchema, "1:pool 2:count"],
];
const fieldsOf = (d: DescMessage) =>
  [...d.fields]
    .sort((a, b) => a.number - b.number)
    .map((f) => `${f.number}:${f.localName}`)
    .join(" ");
/** False when the generated code has fields this encoder does not know. */
export const FAST_ENCODE = ENCODED.every(([d, fields]) => fieldsOf(d) === fields);

class Unsupported extends Error {}
const UNSUPPORTED = new Unsupported("not for the fast path");

// ---- encoding -----------------------------------------------------------------

let scratch = Buffer.allocUnsafe(4096);
let pos = 0;

function ensure(n: number): void {
  if (pos + n <= scratch.length) return;
  const bigger = Buffer.allocUnsafe(Math.max(scratch.length * 2, pos + n));
  scratch.copy(bigger, 0, 0, pos);
  scratch = bigger;
}

function varint(v: number): void {
  ensure(10);
  while (v > 0x7f) {
    scratch[pos++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  scratch[pos++] = v;
}

function varintSize(v: number): number {
  let n = 1;
  while (v > 0x7f) {
    v = Math.floor(v / 0x80);
    n++;
  }
  return n;
}

function utf8Length(s: string): number {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) return Buffer.byteLength(s, "utf8");
  return s.length;
}

function uint32Field(field: number, v: unknown): void {
  if (v === undefined) return;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > MAX_UINT32) throw UNSUPPORTED;
  if (v === 0) return;
  varint(field << 3);
  varint(v);
}

function boolField(field: number, v: unknown): void {
  if (v === undefined || v === false) return;
  if (v !== true) throw UNSUPPORTED;
  varint(field << 3);
  varint(1);
}

function stringField(field: number, s: unknown): void {
  if (s === undefined || s === "") return;
  stringValue(field, s);
}

function stringValue(field: number, s: unknown): void {
  if (typeof s !== "string") throw UNSUPPORTED;
  const n = utf8Length(s);
  varint((field << 3) | 2);
  varint(n);
  ensure(n);
  if (n === s.length) {
    for (let i = 0; i < n; i++) scratch[pos + i] = s.charCodeAt(i);
  } else scratch.write(s, pos, n, "utf8");
  pos += n;
}

function repeatedString(field: number, list: unknown): void {
  if (list === undefined) return;
  if (!Array.isArray(list)) throw UNSUPPORTED;
  for (const s of list) stringValue(field, s);
}

/** A nested message of uint32 fields 1 and 2 (Segment, and PoolTake's count). */
function plainObject(v: unknown): Record<string, unknown> {
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw UNSUPPORTED;
  return v as Record<string, unknown>;
}

/** Writes `write`'s output as length-delimited field `field`. */
function nested(field: number, write: () => void): void {
  varint((field << 3) | 2);
  // Reserve one byte for the length; move the body when it needs more.
  ensure(1);
  const lenAt = pos++;
  const start = pos;
  write();
  const len = pos - start;
  if (len <= 0x7f) {
    scratch[lenAt] = len;
    return;
  }
  const extra = varintSize(len) - 1;
  ensure(extra);
  scratch.copy(scratch, start + extra, start, pos);
  pos = lenAt;
  varint(len);
  pos += len;
}

function segmentField(field: number, v: unknown): void {
  if (v === undefined) return;
  const s = plainObject(v);
  nested(field, () => {
    uint32Field(1, s.fromStop);
    uint32Field(2, s.toStop);
  });
}

function unitsField(field: number, list: unknown): void {
  if (list === undefined) return;
  if (!Array.isArray(list)) throw UNSUPPORTED;
  for (const t of list) {
    const u = plainObject(t);
    nested(field, () => {
      stringField(1, u.pool);
      uint32Field(2, u.count);
    });
  }
}

function methodBody(method: Method, v: Record<string, unknown>): void {
  stringField(1, v.namespace);
  stringField(2, v.partition);
  repeatedString(3, v.ids);
  if (method === "hold") {
    uint32Field(4, v.ttlMs);
    unitsField(5, v.units);
    segmentField(15, v.segment);
    boolField(16, v.session);
    uint32Field(17, v.waitMs);
  } else if (method === "extend") {
    stringField(4, v.token);
    uint32Field(5, v.ttlMs);
    repeatedString(6, v.pools);
    segmentField(15, v.segment);
  } else {
    stringField(4, v.token);
    repeatedString(5, v.pools);
    segmentField(15, v.segment);
  }
}

/**
 * The frame (4-byte length, then the Request) of a call: what
 * `encodeRequest(create(RequestSchema, {id, correlationId, timeoutMs,
 * traceparent, method: {case: method, value}}))` returns, written directly
 * for hold, extend and release.
 */
export function encodeCall(
  id: number,
  correlationId: string,
  timeoutMs: number,
  traceparent: string,
  method: Method,
  value: object,
): Buffer {
  const field = METHOD_FIELD[method];
  if (FAST_ENCODE && field !== undefined && Number.isSafeInteger(id) && id >= 0) {
    try {
      pos = 0;
      ensure(4);
      pos = 4;
      if (id !== 0) {
        varint(1 << 3);
        varint(id);
      }
      stringField(2, correlationId);
      uint32Field(3, timeoutMs);
      stringField(4, traceparent);
      nested(field, () => methodBody(method, plainObject(value)));
      const frame = Buffer.allocUnsafe(pos);
      scratch.copy(frame, 0, 0, pos);
      frame.writeUInt32BE(pos - 4, 0);
      return frame;
    } catch (err) {
      if (!(err instanceof Unsupported)) throw err;
    }
  }
  const req = create(RequestSchema, {
    id: BigInt(id),
    correlationId,
    timeoutMs,
    traceparent,
    method: { case: method, value } as Request["method"],
  });
  const body = toBinary(RequestSchema, req);
  const frame = Buffer.allocUnsafe(4 + body.length);
  frame.writeUInt32BE(body.length, 0);
  frame.set(body, 4);
  return frame;
}

// ---- decoding -----------------------------------------------------------------

const ASCII = new TextDecoder("utf-8", { ignoreBOM: true }); // only ever given ASCII
let rbuf: Uint8Array = new Uint8Array(0);
let rpos = 0;

/** A varint below 2^53 (else unsupported: the general decoder reads it). */
function readVarint(end: number): number {
  let v = 0;
  let mul = 1;
  for (let i = 0; i < 8; i++) {
    if (rpos >= end) throw UNSUPPORTED;
    const b = rbuf[rpos++];
    v += (b & 0x7f) * mul;
    if (b < 0x80) {
      if (v > Number.MAX_SAFE_INTEGER) throw UNSUPPORTED;
      return v;
    }
    mul *= 0x80;
  }
  throw UNSUPPORTED;
}

function readUint32(end: number): number {
  const v = readVarint(end);
  if (v > MAX_UINT32) throw UNSUPPORTED;
  return v;
}

function readString(end: number): string {
  const n = readVarint(end);
  const stop = rpos + n;
  if (stop > end) throw UNSUPPORTED;
  let ascii = true;
  for (let i = rpos; i < stop; i++) {
    if (rbuf[i] >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (!ascii) throw UNSUPPORTED; // the general decoder's UTF-8 rules (strict or not, by field)
  const s = n === 0 ? "" : ASCII.decode(rbuf.subarray(rpos, stop));
  rpos = stop;
  return s;
}

function readLength(end: number): number {
  const n = readVarint(end);
  if (rpos + n > end) throw UNSUPPORTED;
  return rpos + n;
}

function decodeHold(end: number) {
  const m = { $typeName: "holdfast.v1.HoldResponse" as const, token: "", fence: 0n, ttlMs: 0 };
  while (rpos < end) {
    const tag = readVarint(end);
    if (tag === (1 << 3 | 2)) m.token = readString(end);
    else if (tag === (2 << 3)) m.fence = BigInt(readVarint(end));
    else if (tag === (3 << 3)) m.ttlMs = readUint32(end);
    else throw UNSUPPORTED;
  }
  return m;
}

function decodeTtl(end: number) {
  const m = { $typeName: "holdfast.v1.ExtendResponse" as const, ttlMs: 0 };
  while (rpos < end) {
    if (readVarint(end) !== 1 << 3) throw UNSUPPORTED;
    m.ttlMs = readUint32(end);
  }
  return m;
}

function decodeReleased(end: number) {
  const m = { $typeName: "holdfast.v1.ReleaseResponse" as const, released: 0 };
  while (rpos < end) {
    if (readVarint(end) !== 1 << 3) throw UNSUPPORTED;
    m.released = readUint32(end);
  }
  return m;
}

function decodeErrorDetail(end: number) {
  const m = { $typeName: "holdfast.v1.ErrorDetail" as const, field: "", resourceId: "" };
  while (rpos < end) {
    const tag = readVarint(end);
    if (tag === (1 << 3 | 2)) m.field = readString(end);
    else if (tag === (2 << 3 | 2)) m.resourceId = readString(end);
    else throw UNSUPPORTED;
  }
  return m;
}

function decodeFast(body: Uint8Array): Response {
  rbuf = body;
  rpos = 0;
  const end = body.length;
  const r: Record<string, unknown> = {
    $typeName: "holdfast.v1.Response",
    id: 0n,
    correlationId: "",
    code: 0,
    message: "",
    degraded: false,
    result: { case: undefined },
  };
  let seenResult = false;
  let seenError = false;
  while (rpos < end) {
    const tag = readVarint(end);
    switch (tag) {
      case 1 << 3:
        r.id = BigInt(readVarint(end));
        break;
      case (2 << 3) | 2:
        r.correlationId = readString(end);
        break;
      case 3 << 3:
        r.code = readUint32(end) | 0; // an int32 enum: negative values take 10 bytes (unsupported)
        break;
      case (4 << 3) | 2:
        r.message = readString(end);
        break;
      case 5 << 3: {
        const v = readVarint(end);
        if (v > 1) throw UNSUPPORTED;
        r.degraded = v === 1;
        break;
      }
      case (6 << 3) | 2:
        if (seenError) throw UNSUPPORTED; // merged by the general decoder
        seenError = true;
        r.error = decodeErrorDetail(readLength(end));
        break;
      case (10 << 3) | 2:
      case (11 << 3) | 2:
      case (12 << 3) | 2: {
        if (seenResult) throw UNSUPPORTED;
        seenResult = true;
        const stop = readLength(end);
        if (tag === ((10 << 3) | 2)) r.result = { case: "hold", value: decodeHold(stop) };
        else if (tag === ((11 << 3) | 2)) r.result = { case: "extend", value: decodeTtl(stop) };
        else r.result = { case: "release", value: decodeReleased(stop) };
        break;
      }
      default:
        throw UNSUPPORTED;
    }
  }
  return r as unknown as Response;
}

/** fromBinary(ResponseSchema, body), read directly when the result is a hold, extend or release (or none). */
export function decodeResponseBody(body: Uint8Array): Response {
  try {
    return decodeFast(body);
  } catch (err) {
    if (!(err instanceof Unsupported)) throw err;
  } finally {
    rbuf = EMPTY; // keep no reference to the caller's bytes
  }
  return fromBinary(ResponseSchema, body);
}
const EMPTY = new Uint8Array(0);
