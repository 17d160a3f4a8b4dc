// Every numeric query parameter of core's API is bounded (issue 32: `?to=9007199254740992` was a
// 500 on /savings, /warmup and /spot-placement). The app is built from the same route plugins as
// `wave core` (apiRoutes), and the parameters are found in its OpenAPI document, so a route added
// later is covered without editing this test.
import { connectTestCluster } from "../core/hub/testing.ts";
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { FastifyInstance } from "fastify";
import { build } from "../api/app.ts";
import { ClusterHub } from "../core/hub/hub.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import { apiRoutes } from "./parts.ts";

const tokens = { admin: "admin-token-0123456789", viewer: "viewer-token-0123456789" };
const V = { authorization: `Bearer ${tokens.viewer}` };
const TWO_53 = "9007199254740992";

let store: Store;
let app: FastifyInstance;

before(async () => {
  store = await openStore({ backend: "sqlite", path: ":memory:" }, { log: silentLogger });
  const clock = new FakeClock(Date.parse("2026-03-02T12:00:00Z"));
  const hub = new ClusterHub(store, clock);
  await connectTestCluster(hub, clock.now());
  app = await build({
    tokens,
    clock,
    plugins: apiRoutes({ hub, store, prices: new KwokPriceProvider(), clock, clusterId: "c1" }),
  });
});

after(async () => {
  await app.close();
  await store.close();
});

interface OpenApi {
  paths: Record<
    string,
    Record<string, { parameters?: { in: string; name: string; schema?: { type?: string } }[] }>
  >;
}

describe("numeric query parameters are bounded", () => {
  for (const path of ["savings", "warmup", "spot-placement", "events", "disruptions"])
    it(`/${path}?to=2^53 → 400 with a clear message`, async () => {
      const r = await app.inject({ url: `/api/v1/clusters/c1/${path}?to=${TWO_53}`, headers: V });
      assert.equal(r.statusCode, 400, r.body);
      assert.match(r.json<{ message: string }>().message, /to must be <= 8640000000000000/);
    });

  it("every numeric query parameter of every route: 2^53 → 400, never 500", async () => {
    const doc = app.swagger() as unknown as OpenApi;
    const tried: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const p of op.parameters ?? []) {
          if (p.in !== "query" || !["integer", "number"].includes(p.schema?.type ?? "")) continue;
          const url = `${path.replaceAll(/\{[^}]+\}/g, (m) => (m === "{id}" ? "c1" : "x"))}?${p.name}=${TWO_53}`;
          const r = await app.inject({ method: method.toUpperCase() as "GET", url, headers: V });
          tried.push(`${method} ${url}`);
          assert.equal(r.statusCode, 400, `${method} ${url}: ${r.body}`);
          assert.match(r.json<{ message: string }>().message, new RegExp(`${p.name} must be <=`));
        }
      }
    }
    // The routes of the finding and the dashboard's ranges are among them.
    for (const p of ["savings?to", "warmup?to", "spot-placement?to", "series?window", "nodes?offset"])
      assert.ok(
        tried.some((t) => t.includes(p)),
        `${p} not found among ${tried.join(", ")}`,
      );
  });

  it("a route whose numeric query parameter has no maximum is refused when the app is built", async () => {
    await assert.rejects(
      build({
        tokens,
        plugins: [
          (s) => {
            s.get(
              "/api/v1/open",
              {
                schema: {
                  querystring: { type: "object", properties: { n: { type: "integer", minimum: 0 } } },
                },
              },
              () => ({}),
            );
          },
        ],
      }),
      /GET \/api\/v1\/open: numeric query parameter\(s\) n need a minimum and a maximum/,
    );
  });
});
