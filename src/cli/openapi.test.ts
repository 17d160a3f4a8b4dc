// The OpenAPI document core serves at /openapi.json, built from core's real app (every route
// plugin), checked by a real OpenAPI 3.1 validator: 0 errors, an operationId on every operation,
// path parameters that exist in their path, and the pre-cluster policy routes deprecated.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import type { FastifyInstance } from "fastify";
import { ClusterHub } from "../core/hub/hub.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import { Registry } from "../shared/metrics.ts";
import { coreApi } from "./parts.ts";

interface Operation {
  operationId?: string;
  deprecated?: boolean;
  parameters?: { in: string; name: string }[];
}
type OpenApi = { paths: Record<string, Record<string, Operation>> };

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];

let store: Store;
let app: FastifyInstance;
let doc: OpenApi;

before(async () => {
  const clock = new FakeClock(Date.parse("2026-03-02T12:00:00Z"));
  store = await openStore({ backend: "sqlite", path: ":memory:" }, { log: silentLogger });
  app = await coreApi({
    config: { clusterId: "default", publicMetrics: false, serveSourceMaps: false },
    tokens: { admin: "a-token", viewer: "v-token" },
    hub: new ClusterHub(store, clock),
    store,
    prices: new KwokPriceProvider(),
    clock,
    metrics: new Registry(),
    warmupTotals: () => ({ hits: 0, misses: 0, timeSavedSeconds: 0 }),
    onPolicyChange: () => Promise.resolve(),
  });
  const res = await app.inject({ url: "/openapi.json", headers: { authorization: "Bearer v-token" } });
  assert.equal(res.statusCode, 200);
  doc = res.json<OpenApi>();
});

after(async () => {
  await app.close();
  await store.close();
});

const operations = (): [string, string, Operation][] =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).flatMap(([method, op]) => (METHODS.includes(method) ? [[path, method, op]] : [])),
  ) as [string, string, Operation][];

describe("core's OpenAPI document", () => {
  it("has 0 errors from an OpenAPI validator", async () => {
    const res = await new Validator().validate(structuredClone(doc));
    assert.deepEqual(res.errors ?? [], [], JSON.stringify(res.errors, null, 1));
    assert.equal(res.valid, true);
  });

  it("names every operation with a unique operationId", () => {
    const ops = operations();
    assert.ok(ops.length > 20, `${ops.length} operations`);
    const missing = ops.filter(([, , op]) => !op.operationId).map(([p, m]) => `${m} ${p}`);
    assert.deepEqual(missing, []);
    const ids = ops.map(([, , op]) => op.operationId);
    assert.equal(new Set(ids).size, ids.length, "operationIds are unique");
  });

  it("declares only path parameters its path contains, and every one it contains", () => {
    for (const [path, method, op] of operations()) {
      const declared = (op.parameters ?? [])
        .filter((p) => p.in === "path")
        .map((p) => p.name)
        .sort();
      const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      assert.deepEqual(declared, inPath, `${method} ${path}`);
    }
  });

  it("marks the pre-cluster /api/v1/policies routes deprecated, and only those", () => {
    for (const [path, method, op] of operations()) {
      assert.equal(op.deprecated === true, path.startsWith("/api/v1/policies"), `${method} ${path}`);
    }
  });
});
