// The node drawer's route for a NodeClaim Karpenter already removed: the Disruptions page links
// every disrupted NodeClaim, so the drawer serves it from the stored lifecycle, not a 404.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { FastifyInstance } from "fastify";
import { fixtures } from "../../../test/fixtures/karpenter/load.ts";
import { ClusterHub } from "../../core/hub/hub.ts";
import { connectTestCluster, deliverSnapshot } from "../../core/hub/testing.ts";
import { openStore } from "../../core/store/open.ts";
import type { Store } from "../../core/store/store.ts";
import type { NodeDetailDto } from "../../dashboard/dto.ts";
import { KwokPriceProvider } from "../../pricing/kwok.ts";
import { FakeClock } from "../../shared/clock.ts";
import { silentLogger } from "../../shared/log.ts";
import { build } from "../app.ts";
import { consoleRoutes } from "./console.ts";

const NOW = Date.parse("2026-03-02T12:00:00Z");
const V = { authorization: "Bearer v-token" };
const prices = new KwokPriceProvider();

let store: Store;
let app: FastifyInstance;

before(async () => {
  const clock = new FakeClock(NOW);
  store = await openStore({ backend: "sqlite", path: ":memory:" }, { log: silentLogger });
  const hub = new ClusterHub(store, clock);
  await connectTestCluster(hub, NOW - 5000, { agentVersion: "test" });
  await deliverSnapshot(hub, NOW, [{ kind: "NodePool", object: fixtures.nodePool() }]);
  // A spot NodeClaim, launched, registered as node "n-gone", consolidated and terminated.
  const base = {
    clusterId: "c1",
    nodeClaim: "default-abc12",
    nodeClaimUid: "u-1",
    nodePool: "default",
    instanceType: "c-4x-amd64-linux",
    capacityType: "spot",
    zone: "test-zone-a",
  };
  const t = NOW - 3_600_000;
  await store.write({
    lifecycle: [
      { ...base, phase: "Launched", at: t },
      { ...base, nodeName: "n-gone", phase: "Registered", at: t + 30_000 },
      { ...base, nodeName: "n-gone", phase: "Initialized", at: t + 40_000 },
      { ...base, nodeName: "n-gone", phase: "Disrupted", reason: "Underutilized", at: t + 600_000 },
      { ...base, nodeName: "n-gone", phase: "Terminated", reason: "Underutilized", at: t + 610_000 },
      // Another NodeClaim of another cluster with the same name: never mixed in.
      { ...base, clusterId: "c2", nodeClaimUid: "u-2", phase: "Launched", at: t },
    ],
  });
  app = await build({
    tokens: { admin: "a-token", viewer: "v-token" },
    plugins: [consoleRoutes({ hub, prices, now: () => clock.now() })],
  });
});

after(async () => {
  await app.close();
  await store.close();
});

describe("node drawer of a NodeClaim that is gone", () => {
  for (const name of ["default-abc12", "n-gone"]) {
    it(`serves ${name} from the stored history: timeline, price, labels`, async () => {
      const r = await app.inject({ url: `/api/v1/clusters/c1/nodes/${name}`, headers: V });
      assert.equal(r.statusCode, 200, r.body);
      const d = r.json<NodeDetailDto>();
      assert.equal(d.gone, true);
      assert.equal(d.nodeClaim, "default-abc12");
      assert.deepEqual(
        d.timeline.map((s) => [s.phase, s.sincePreviousSeconds, s.reason]),
        [
          ["Launched", null, null],
          ["Registered", 30, null],
          ["Initialized", 10, null],
          ["Disrupted", 560, "Underutilized"],
          ["Terminated", 10, "Underutilized"],
        ],
      );
      assert.equal(d.price.usdPerHour, prices.price("c-4x-amd64-linux", "spot")?.usdPerHour);
      assert.equal(d.labels["karpenter.sh/capacity-type"], "spot");
      assert.equal(d.labels["karpenter.sh/nodepool"], "default");
      assert.deepEqual(d.pods, []);
    });
  }

  it("still answers 404 for a name neither the cluster nor its history knows", async () => {
    const r = await app.inject({ url: "/api/v1/clusters/c1/nodes/never-was", headers: V });
    assert.equal(r.statusCode, 404);
    assert.match(r.json<{ message: string }>().message, /no node or NodeClaim "never-was"/);
  });
});
