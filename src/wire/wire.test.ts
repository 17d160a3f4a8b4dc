import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AgentMessageSchema, ObjectKind } from "../gen/wave/v1/ingest_pb.ts";
import { node, nodeClaim, nodePool, pod } from "../agent/fixtures.ts";
import {
  WireError,
  decodeObject,
  encodeJson,
  kindFromProto,
  kindToProto,
  objectKey,
  snapshotChunkMessage,
  toMessage,
} from "./wire.ts";
import type { EncodedObject, WireObject } from "./wire.ts";

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

describe("wire codec", () => {
  it("round-trips objects with their kind", () => {
    for (const o of [node(1), pod(2, 3)]) {
      const back = decodeObject({ kind: kindToProto(o.kind), json: encodeJson(o) });
      assert.deepEqual(back, o);
    }
    assert.equal(kindFromProto(ObjectKind.NODE_CLAIM), "NodeClaim");
    assert.equal(kindFromProto(99), undefined);
    assert.equal(objectKey(pod(2, 3).object), "ns-2/app-2");
    assert.equal(objectKey(node(1).object), "node-1");
  });

  it("encodes a snapshot chunk byte for byte as protobuf-es encodes the typed message", () => {
    const big = node(7);
    big.object.metadata.labels = { long: "x".repeat(70_000), ünïcödé: "値 ✓ 🚀" };
    const cases: WireObject[][] = [
      [],
      [nodePool("default")],
      [nodePool("default"), nodeClaim(1), node(2), pod(3, 4), big],
      Array.from({ length: 300 }, (_, i) => pod(i, 10)),
    ];
    for (const objects of cases) {
      const encoded: EncodedObject[] = objects.map((o) => ({ kind: o.kind, json: JSON.stringify(o.object) }));
      const sizes = encoded.map((o) => Buffer.byteLength(o.json, "utf8"));
      const fast = toBinary(AgentMessageSchema, snapshotChunkMessage(3_000_000_000, encoded, sizes));
      const typed = create(AgentMessageSchema, {
        sequence: 3_000_000_000n,
        body: {
          case: "snapshotChunk",
          value: { objects: objects.map((o) => toMessage(o.kind, encodeJson(o))) },
        },
      });
      assert.deepEqual(Buffer.from(fast), Buffer.from(toBinary(AgentMessageSchema, typed)));
      const back = fromBinary(AgentMessageSchema, fast);
      assert.ok(back.body.case === "snapshotChunk");
      assert.deepEqual(back.body.value.objects.map(decodeObject), objects);
    }
  });

  it("rejects malformed objects with a message that says what is wrong", () => {
    const bad: [number, string, RegExp][] = [
      [0, "{}", /unknown object kind 0/],
      [ObjectKind.NODE, "{", /not valid UTF-8 JSON/],
      [ObjectKind.NODE, "[1]", /must be a JSON object/],
      [ObjectKind.NODE, '{"metadata":1}', /metadata must be an object/],
      [ObjectKind.NODE, '{"metadata":{}}', /metadata.name is required/],
      [ObjectKind.NODE, '{"metadata":{"name":"n","namespace":"x"}}', /cluster-scoped object has a namespace/],
      [ObjectKind.POD, '{"metadata":{"name":"p"},"spec":{}}', /namespace is required/],
      [ObjectKind.POD, '{"metadata":{"name":"p","namespace":"d"}}', /spec is required/],
      [ObjectKind.NODE, '{"metadata":{"name":"n","labels":{"a":1}}}', /labels must map strings/],
      [
        ObjectKind.NODE_CLAIM,
        '{"metadata":{"name":"c"},"status":{"conditions":{}}}',
        /conditions must be an array/,
      ],
      [ObjectKind.EVENT, '{"metadata":{"name":"e","namespace":"d"}}', /involvedObject is required/],
    ];
    for (const [kind, json, msg] of bad) {
      assert.throws(
        () => decodeObject({ kind, json: enc(json) }),
        (err: Error) => err instanceof WireError && msg.test(err.message),
        json,
      );
    }
    assert.throws(
      () => decodeObject({ kind: ObjectKind.NODE, json: new Uint8Array([0xff, 0xfe]) }),
      /not valid UTF-8/,
    );
  });
});
