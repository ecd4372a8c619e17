// Golden frames from protos/testdata: decode, compare with the JSON, re-encode byte for byte.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { equals, fromBinary, fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { FrameReader, decodeResponse, encodeFrame, encodeRequest } from "../src/frame.js";
import { RequestSchema, ResponseSchema, type Request } from "../src/gen/holdfast/v1/holdfast_pb.js";

const TESTDATA = new URL("../../../../protos/testdata/", import.meta.url);

interface Case {
  name: string;
  type: "Request" | "Response";
  file: string;
  json: JsonValue;
}

const cases: Case[] = JSON.parse(readFileSync(new URL("manifest.json", TESTDATA), "utf8"));
const frameOf = (c: Case) => readFileSync(new URL(c.file, TESTDATA));

test("manifest lists requests and responses", () => {
  assert.ok(cases.length >= 15);
  assert.deepEqual(new Set(cases.map((c) => c.type)), new Set(["Request", "Response"]));
  assert.equal(new Set(cases.map((c) => c.name)).size, cases.length);
});

for (const c of cases) {
  test(`golden ${c.name}: decode, compare with JSON, re-encode byte for byte`, () => {
    const frame = frameOf(c);
    assert.equal(frame.readUInt32BE(0), frame.length - 4);
    const body = frame.subarray(4);
    const schema = c.type === "Request" ? RequestSchema : ResponseSchema;
    const msg = fromBinary(schema, body);

    assert.deepEqual(toJson(schema, msg, { useProtoFieldName: true }), c.json);
    assert.ok(equals(schema, msg, fromJson(schema, c.json)), "JSON parses to the same message");

    assert.deepEqual(encodeFrame(schema, msg), frame);
    if (c.type === "Request") assert.deepEqual(encodeRequest(msg as Request), frame);
  });
}

test("response frames split at every byte reassemble", () => {
  const responses = cases.filter((c) => c.type === "Response");
  const stream = Buffer.concat(responses.map(frameOf));
  const reader = new FrameReader();
  const bodies: Buffer[] = [];
  for (let i = 0; i < stream.length; i++) bodies.push(...reader.feed(stream.subarray(i, i + 1)));
  assert.equal(reader.pendingBytes, 0);
  assert.deepEqual(
    bodies.map((b) => toJson(ResponseSchema, decodeResponse(b), { useProtoFieldName: true })),
    responses.map((c) => c.json),
  );
});

test("request id 2^63+5 stays an exact uint64", () => {
  const c = cases.find((x) => x.name === "large_id_request")!;
  const req = fromBinary(RequestSchema, frameOf(c).subarray(4));
  assert.equal(req.id, 2n ** 63n + 5n);
});
