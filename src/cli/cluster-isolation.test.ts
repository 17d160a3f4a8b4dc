// Issue 42, finding 5: every route that lists across clusters shows a caller only the clusters it
// has a role in — core's real app with two clusters, a proxy user who is a viewer in `alpha` and
// nothing in `beta`, and the static admin token (core-wide). The routes that list are found in
// the OpenAPI document (and /metrics), so a new one without a filter fails here.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { FastifyInstance } from "fastify";
import { nodePool } from "../agent/fixtures.ts";
import { parseConfig } from "../config/config.ts";
import { ClusterHub } from "../core/hub/hub.ts";
import { connectTestCluster, deliverSnapshot } from "../core/hub/testing.ts";
import { openStore } from "../core/store/open.ts";
import type { Store } from "../core/store/store.ts";
import type { ClusterDto } from "../dashboard/dto.ts";
import { KwokPriceProvider } from "../pricing/kwok.ts";
import { FakeClock } from "../shared/clock.ts";
import { silentLogger } from "../shared/log.ts";
import { Registry } from "../shared/metrics.ts";
import { coreApi, dashboardMetrics } from "./parts.ts";

const NOW = Date.UTC(2026, 5, 1, 12);
const ADMIN = { authorization: "Bearer admin-token-0123456789" };
/** A proxy user (trusted: inject() comes from 127.0.0.1) who is a viewer in alpha only. */
const ALPHA_VIEWER = { "x-auth-request-user": "val", "x-auth-request-groups": "alpha-team" };

/**
 * The routes that list across clusters: every GET without a cluster in its path that returns
 * clusters' data. Routes without a cluster that act on core's own cluster only (the deprecated
 * /api/v1/policies…, who am I) are authorized for it like any cluster route.
 */
export const LIST_ROUTES = ["/api/v1/clusters", "/metrics"];
const OWN_CLUSTER_ONLY = /^\/api\/v1\/(policies|whoami)\b/;

let dir = "";
let store: Store;
let app: FastifyInstance;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "wave-isolation-"));
  const roles = join(dir, "roles.yaml");
  await writeFile(
    roles,
    'clusters:\n  "*":\n    admin: [ops]\n    viewer: []\n  alpha:\n    admin: [ops]\n    viewer: [alpha-team]\n',
  );
  const { config } = parseConfig([], {
    WAVE_CLUSTER_ID: "alpha",
    WAVE_AUTH_ROLES: roles,
    WAVE_AUTH_PROXY_TRUSTED: "127.0.0.1",
  });
  const clock = new FakeClock(NOW);
  store = await openStore(
    { backend: "sqlite", path: ":memory:" },
    { log: silentLogger, now: () => clock.now() },
  );
  const hub = new ClusterHub(store, clock);
  for (const id of ["alpha", "beta"]) {
    await connectTestCluster(hub, NOW - 60_000, { clusterId: id, sessionId: `s-${id}` });
    await deliverSnapshot(hub, NOW, [nodePool("general")], { clusterId: id, sessionId: `s-${id}` });
  }
  const metrics = new Registry();
  dashboardMetrics({ metrics, hub, prices: new KwokPriceProvider(), store, clock });
  app = await coreApi({
    config,
    tokens: { admin: "admin-token-0123456789", viewer: "viewer-token-0123456789" },
    hub,
    store,
    prices: new KwokPriceProvider(),
    clock,
    metrics,
    warmupTotals: () => ({ hits: 0, misses: 0, timeSavedSeconds: 0 }),
    onPolicyChange: () => Promise.resolve(),
  });
});

after(async () => {
  await app.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

/** The clusters a list route's answer names. */
async function clustersListed(url: string, headers: Record<string, string>): Promise<string[]> {
  const r = await app.inject({ url, headers });
  assert.equal(r.statusCode, 200, `${url}: ${r.body}`);
  if (url === "/metrics")
    return [...new Set([...r.body.matchAll(/[{,]cluster="([^"]+)"/g)].map((m) => m[1] ?? ""))].sort();
  return r
    .json<ClusterDto[]>()
    .map((c) => c.id)
    .sort();
}

describe("lists across clusters show the caller's clusters only", () => {
  it("every list route is known: the OpenAPI document has no other GET without a cluster", async () => {
    const doc = (await app.inject({ url: "/openapi.json", headers: ADMIN })).json<{
      paths: Record<string, Record<string, unknown>>;
    }>();
    const others = Object.entries(doc.paths)
      .filter(([path, ops]) => "get" in ops && !path.includes("{id}") && !OWN_CLUSTER_ONLY.test(path))
      .map(([path]) => path)
      .filter((p) => !LIST_ROUTES.includes(p));
    assert.deepEqual(others, []);
  });

  for (const route of LIST_ROUTES)
    it(`${route}: a viewer of alpha sees alpha only; the admin token sees both`, async () => {
      assert.deepEqual(await clustersListed(route, ADMIN), ["alpha", "beta"]);
      assert.deepEqual(await clustersListed(route, ALPHA_VIEWER), ["alpha"]);
      // The same user is refused on beta's own routes: the list no longer says more than they do.
      const beta = await app.inject({ url: "/api/v1/clusters/beta", headers: ALPHA_VIEWER });
      assert.equal(beta.statusCode, 403);
    });
});
