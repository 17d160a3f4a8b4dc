// Behaviour kept across refactors: the dashboard figures of the embedded simulated cluster at a
// fixed simulated time, compared with a golden recorded on the code before the change. The
// cluster runs the scenario `wave start` runs (seeded, injected clock); its objects then take the
// agent's path into core (trim → ingest batch → hub's ClusterState) and the API answers.
// Regenerate only on purpose: WAVE_UPDATE_GOLDEN=1 npx node --test test/unit/figures-golden.test.ts
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { trim } from "../../src/agent/trim.ts";
import type { WireObject } from "../../src/wire/wire.ts";
import { build } from "../../src/api/app.ts";
import { dashboardRoutes } from "../../src/api/routes/dashboard.ts";
import { ClusterHub } from "../../src/core/hub/hub.ts";
import { openStore } from "../../src/core/store/open.ts";
import { MemoryKube } from "../../src/kube/memory/memory.ts";
import { createPricing } from "../../src/pricing/setup.ts";
import { FakeClock } from "../../src/shared/clock.ts";
import { silentLogger } from "../../src/shared/log.ts";
import { seeded } from "../../src/shared/random.ts";
import { buildCatalog, buildOfferings } from "../../src/sim/catalog.ts";
import { seedScenario } from "../../src/sim/scenario.ts";
import { Simulator } from "../../src/sim/simulator.ts";
import { deliver } from "../../src/core/hub/testing.ts";

const GOLDEN = new URL("../fixtures/golden/sim-figures.json", import.meta.url);
const T0 = Date.parse("2026-03-02T12:00:00Z");
const RUN_MS = 8 * 60_000;
const KINDS = ["NodePool", "NodeClaim", "Node", "Pod", "DaemonSet"] as const;

async function figures(): Promise<Record<string, unknown>> {
  const clock = new FakeClock(T0);
  const kube = new MemoryKube({ clock, random: seeded(42) });
  const prices = createPricing({ clock }).provider;
  const sim = new Simulator({
    kube,
    clock,
    offerings: buildOfferings(buildCatalog(), prices),
    random: seeded(7),
  });
  const drive = await seedScenario(kube, T0);
  while (clock.now() < T0 + RUN_MS) {
    await drive(clock.now());
    await sim.tick(1000);
    await clock.advance(1000);
  }
  const snapshot: WireObject[] = [];
  for (const kind of KINDS)
    for (const object of (await kube.list(kind)).items) {
      const t = trim({ kind, object } as WireObject);
      if (t) snapshot.push(t);
    }

  const dir = mkdtempSync(join(tmpdir(), "wave-golden-"));
  const store = await openStore({ backend: "sqlite", path: join(dir, "wave.db") }, { log: silentLogger });
  try {
    const hub = new ClusterHub(store, clock);
    await hub.clusterConnected({
      clusterId: "sim",
      kubernetesVersion: "v1.34.0-sim",
      karpenterVersion: "v1.8-sim",
      agentVersion: "0.1.0",
      sessionId: "s1",
      connectedAt: clock.now(),
    });
    await deliver(hub, {
      clusterId: "sim",
      sessionId: "s1",
      sequence: 1,
      receivedAt: clock.now(),
      snapshot,
      changes: [],
      lifecycle: [],
    });
    const app = await build({
      tokens: { admin: "a", viewer: "v" },
      plugins: [dashboardRoutes({ hub, prices, now: () => clock.now(), clock })],
    });
    const out: Record<string, unknown> = {};
    for (const path of ["overview", "nodepools", "nodes"]) {
      const res = await app.inject({
        url: `/api/v1/clusters/sim/${path}`,
        headers: { authorization: "Bearer v" },
      });
      assert.equal(res.statusCode, 200, res.body);
      out[path] = res.json();
    }
    await app.close();
    return out;
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `got` cut to the fields the golden recorded: a field added to a DTO since (e.g. a node's
 * priceAsOf) is new information, not a changed figure; every recorded field must still be equal.
 */
function recorded(got: unknown, want: unknown): unknown {
  if (Array.isArray(got) && Array.isArray(want)) return got.map((g, i) => recorded(g, want[i]));
  if (
    typeof got !== "object" ||
    got === null ||
    typeof want !== "object" ||
    want === null ||
    Array.isArray(want)
  )
    return got;
  const w = want as Record<string, unknown>;
  return Object.fromEntries(
    Object.entries(got as Record<string, unknown>)
      .filter(([k]) => k in w)
      .map(([k, v]) => [k, recorded(v, w[k])]),
  );
}

describe("dashboard figures of the simulated cluster (golden)", () => {
  it("equal the figures recorded before the change", { timeout: 120_000 }, async () => {
    const got = JSON.parse(JSON.stringify(await figures())) as Record<string, unknown>;
    if (process.env.WAVE_UPDATE_GOLDEN === "1") writeFileSync(GOLDEN, JSON.stringify(got, null, 1) + "\n");
    assert.ok(existsSync(GOLDEN), "no golden: run with WAVE_UPDATE_GOLDEN=1 on the code to compare against");
    const want = JSON.parse(readFileSync(GOLDEN, "utf8")) as Record<string, unknown>;
    // A run that produced nothing would match a golden of nothing: the scenario must show nodes.
    assert.ok(((want.overview as { nodes?: number }).nodes ?? 0) > 0, "the golden shows no nodes");
    assert.deepEqual(recorded(got, want), want);
  });
});
