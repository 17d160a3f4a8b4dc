import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { JsonLinesDecoder } from "./lines.ts";
import { queryString, resourcePath } from "./paths.ts";
import { statusFromBody } from "./client.ts";

describe("resourcePath", () => {
  it("builds core, grouped, namespaced and cluster-scoped paths", () => {
    assert.equal(resourcePath("Node"), "/api/v1/nodes");
    assert.equal(resourcePath("Node", "ignored", "n1"), "/api/v1/nodes/n1");
    assert.equal(resourcePath("Pod"), "/api/v1/pods");
    assert.equal(resourcePath("Pod", "kube-system", "p 1"), "/api/v1/namespaces/kube-system/pods/p%201");
    assert.equal(resourcePath("NodePool", undefined, "default"), "/apis/karpenter.sh/v1/nodepools/default");
    assert.equal(resourcePath("Lease", "wave"), "/apis/coordination.k8s.io/v1/namespaces/wave/leases");
    assert.throws(() => resourcePath("Node", undefined, ""), /must not be empty/);
  });
  it("drops undefined and empty query values", () => {
    assert.equal(queryString({}), "");
    assert.equal(queryString({ a: undefined, b: "", c: 0, d: "x y" }), "?c=0&d=x+y");
  });
});

describe("JsonLinesDecoder", () => {
  const text = '{"type":"ADDED","object":{"n":"é€😀"}}\n\n{"type":"DELETED","object":{}}\n';
  it("reassembles lines and multi-byte characters split at every byte", () => {
    const bytes = Buffer.from(text);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const d = new JsonLinesDecoder();
      const out = [...d.push(bytes.subarray(0, cut)), ...d.push(bytes.subarray(cut)), ...d.end()];
      assert.deepEqual(out, [
        { type: "ADDED", object: { n: "é€😀" } },
        { type: "DELETED", object: {} },
      ]);
    }
  });
  it("accepts a last value without newline and rejects a torn one", () => {
    const d = new JsonLinesDecoder();
    assert.deepEqual(d.push('{"a":1}\n{"b"'), [{ a: 1 }]);
    assert.throws(() => d.end(), /malformed JSON in watch stream/);
    const e = new JsonLinesDecoder();
    e.push('{"b":2}');
    assert.deepEqual(e.end(), [{ b: 2 }]);
  });
});

describe("statusFromBody", () => {
  it("keeps the apiserver's Status", () => {
    const err = statusFromBody(
      409,
      JSON.stringify({
        kind: "Status",
        code: 409,
        reason: "AlreadyExists",
        message: 'nodes "a" already exists',
      }),
      "POST",
      "/api/v1/nodes",
    );
    assert.equal(err.code, 409);
    assert.equal(err.reason, "AlreadyExists");
    assert.equal(err.message, 'nodes "a" already exists');
  });
  it("synthesises one for a proxy's plain-text answer", () => {
    const err = statusFromBody(503, "upstream connect error", "GET", "/api/v1/nodes");
    assert.equal(err.code, 503);
    assert.equal(err.reason, "ServiceUnavailable");
    assert.match(err.message, /GET \/api\/v1\/nodes: HTTP 503: upstream connect error/);
  });
});
