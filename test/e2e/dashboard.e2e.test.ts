// Dashboard acceptance on the rig: Wave (startWave: agent + core + API, in this process) watches
// the real Karpenter. The API's figures for this test's own NodePools must equal values computed
// here by hand from the rig's NodeClaims and the KWOK provider's price formula; a pool whose load
// oscillates under consolidateAfter 0s must be flagged as thrashing with evidence, a calm pool not.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { NodeListDto, NodePoolDto, OverviewDto, ThrashingDto } from "../../src/dashboard/dto.ts";
import { startWave, type Started } from "../../src/cli/start.ts";
import { DEFAULTS } from "../../src/config/config.ts";
import { createLogger } from "../../src/shared/log.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  kubeconfigPath,
  kubectl,
  list,
  remove,
  requireRig,
  waitFor,
  withRigLogsOnFailure,
  type KubeObject,
} from "./harness.ts";
import { applyTaintedPool } from "./pools.ts";

const CLUSTER = "e2e-dashboard";
const POOL_LABEL = "wave.dev/e2e-pool";
const L = {
  pool: "karpenter.sh/nodepool",
  ct: "karpenter.sh/capacity-type",
  it: "node.kubernetes.io/instance-type",
} as const;

let ns = "";
let calm = "";
let churn = "";
let wave: Started | undefined;
let dataDir = "";

// ---- the KWOK price formula, by hand (Karpenter v1.8.2 kwok/tools/gen_instance_types.go) ----
// Types are {c|s|m}-{N}x-{arch}-{os}: N vCPU with 2/4/8 GiB per vCPU; on-demand costs
// 0.025 $/vCPU/h + 0.001 $/GB/h (GB = 1e9 bytes); spot is 0.7 × on-demand.
function handPrice(instanceType: string, capacityType: string): number {
  const m = /^([csm])-(\d+)x-/.exec(instanceType);
  assert.ok(m?.[1] && m[2], `a KWOK instance type name: ${instanceType}`);
  const vcpu = Number(m[2]);
  const memoryBytes = vcpu * { c: 2, s: 4, m: 8 }[m[1] as "c" | "s" | "m"] * 2 ** 30;
  const onDemand = 0.025 * vcpu + (0.001 * memoryBytes) / 1e9;
  return capacityType === "spot" ? 0.7 * onDemand : onDemand;
}

const close = (a: number, b: number): boolean => Math.abs(a - b) < 1e-9 * Math.max(1, Math.abs(b));

async function api<T>(path: string): Promise<T> {
  assert.ok(wave);
  const res = await fetch(new URL(`api/v1/clusters/${CLUSTER}/${path}`, wave.url), {
    headers: { authorization: `Bearer ${wave.tokens.viewer}` },
  });
  assert.equal(res.status, 200, `GET ${path}: ${res.status} ${await res.clone().text()}`);
  return (await res.json()) as T;
}

/** 1-CPU pause pods pinned to `pool`; `spread` puts each replica on a node of its own. */
function deployment(
  name: string,
  pool: string,
  replicas: number,
  opts: { selector?: Record<string, string>; spread?: boolean } = {},
): object {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { [POOL_LABEL]: pool, ...opts.selector },
          tolerations: [{ key: POOL_LABEL, operator: "Equal", value: pool, effect: "NoSchedule" }],
          terminationGracePeriodSeconds: 0,
          ...(opts.spread
            ? {
                affinity: {
                  podAntiAffinity: {
                    requiredDuringSchedulingIgnoredDuringExecution: [
                      {
                        labelSelector: { matchLabels: { app: name } },
                        topologyKey: "kubernetes.io/hostname",
                      },
                    ],
                  },
                },
              }
            : {}),
          containers: [
            { name: "app", image: "pause:3.10", resources: { requests: { cpu: "1", memory: "128Mi" } } },
          ],
        },
      },
    },
  };
}

async function waitRunning(app: string, want: number): Promise<void> {
  const t0 = Date.now();
  await waitFor(
    `${want} Running pods of ${app}`,
    async () => {
      const pods = await list("pods", { namespace: ns, selector: `app=${app}` });
      return pods.filter((p) => p.status?.phase === "Running").length === want;
    },
    { timeoutMs: 90_000, intervalMs: 1_000 },
  );
  log(`${app}: ${want} pods Running after ${((Date.now() - t0) / 1000).toFixed(1)}s`);
}

function log(msg: string): void {
  process.stderr.write(`# ${msg}\n`);
}

const claimsOf = async (pool: string): Promise<KubeObject[]> =>
  list("nodeclaims.karpenter.sh", { selector: `${L.pool}=${pool}` });

/** What the API must say about one pool, from its NodeClaims (launched ones carry the type labels). */
function expectedPool(claims: readonly KubeObject[]): {
  nodes: number;
  byCt: Record<string, number>;
  costPerHour: number;
  costByCt: Record<string, number>;
  perNode: Map<string, { instanceType: string; capacityType: string; costPerHour: number }>;
} {
  const byCt: Record<string, number> = {};
  const costByCt: Record<string, number> = {};
  const perNode = new Map<string, { instanceType: string; capacityType: string; costPerHour: number }>();
  let costPerHour = 0;
  for (const c of claims) {
    const it = c.metadata.labels?.[L.it];
    const ct = c.metadata.labels?.[L.ct];
    assert.ok(it && ct, `NodeClaim ${c.metadata.name} has instance-type and capacity-type labels`);
    const usd = handPrice(it, ct);
    byCt[ct] = (byCt[ct] ?? 0) + 1;
    costByCt[ct] = (costByCt[ct] ?? 0) + usd;
    costPerHour += usd;
    const nodeName = c.status?.["nodeName"];
    perNode.set(typeof nodeName === "string" && nodeName !== "" ? nodeName : c.metadata.name, {
      instanceType: it,
      capacityType: ct,
      costPerHour: usd,
    });
  }
  return { nodes: claims.length, byCt, costPerHour, costByCt, perNode };
}

before(async () => {
  await requireRig();
  ns = await createNamespace("e2e-dash");
  calm = `${ns}-calm`;
  churn = `${ns}-churn`;
  // Calm: only empty nodes go, and only after 10 minutes. Churn: anything goes, at once.
  await applyTaintedPool(calm, { disruption: { consolidationPolicy: "WhenEmpty", consolidateAfter: "10m" } });
  await applyTaintedPool(churn, {
    disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "0s" },
  });
  dataDir = mkdtempSync(join(tmpdir(), "wave-e2e-dash-"));
  wave = await startWave(
    {
      ...DEFAULTS,
      kubeconfig: kubeconfigPath,
      clusterId: CLUSTER,
      namespace: ns,
      port: 0,
      grpcPort: 0,
      webhookPort: 0,
      dataDir,
      logLevel: "warn",
    },
    {},
    { log: createLogger({ level: "warn", base: { app: "wave-e2e" } }) },
  );
});

after(async () => {
  await wave?.stop();
  if (dataDir !== "") rmSync(dataDir, { recursive: true, force: true });
  if (ns !== "") await deleteNamespace(ns);
  // Deleting a NodePool makes Karpenter remove the NodeClaims it still owns.
  for (const p of [calm, churn]) if (p !== "") await remove("nodepools.karpenter.sh", p);
});

test(
  "dashboard e2e: API figures equal the KWOK formula over the rig's NodeClaims",
  { timeout: 180_000 },
  () =>
    withRigLogsOnFailure(async () => {
      // Two spot-eligible pods, then one that requires on-demand: both price paths. (Created
      // together, one on-demand node would take all three.)
      await apply(deployment("steady", calm, 2));
      await waitRunning("steady", 2);
      await apply(deployment("steady-od", calm, 1, { selector: { [L.ct]: "on-demand" } }));
      await waitRunning("steady-od", 1);

      // The agent streams with some lag: poll until the API agrees with the rig's NodeClaims.
      let want = expectedPool(await claimsOf(calm));
      const pool = await waitFor(
        `the API's NodePool ${calm} to match the rig's NodeClaims`,
        async () => {
          want = expectedPool(await claimsOf(calm));
          const p = (await api<NodePoolDto[]>("nodepools")).find((x) => x.name === calm);
          return p && p.nodes === want.nodes && close(p.costPerHour, want.costPerHour) ? p : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      assert.ok(want.nodes >= 2, "a spot and an on-demand node at least");
      assert.deepEqual(pool.nodesByCapacityType, want.byCt);
      for (const [ct, usd] of Object.entries(want.costByCt)) {
        const got = pool.costByCapacityType[ct as "spot"];
        assert.ok(got !== undefined && close(got, usd), `${ct} $/h: API ${got} vs hand ${usd}`);
      }
      assert.ok(close(pool.costPerMonth, pool.costPerHour * 730), "$/month = 730 × $/h");
      assert.deepEqual(pool.capacityTypes, ["on-demand", "spot"]);
      assert.equal(pool.consolidateAfter, "10m");
      log(
        `pool ${calm}: ${pool.nodes} nodes ${JSON.stringify(pool.nodesByCapacityType)}, ` +
          `API $${pool.costPerHour.toFixed(6)}/h = hand $${want.costPerHour.toFixed(6)}/h`,
      );

      // Per node: type, capacity type and price.
      const nodes = await api<NodeListDto>(`nodes?pool=${encodeURIComponent(calm)}`);
      assert.equal(nodes.total, want.nodes);
      for (const n of nodes.items) {
        const w = want.perNode.get(n.name);
        assert.ok(w, `node ${n.name} is one of the pool's NodeClaims`);
        assert.equal(n.instanceType, w.instanceType);
        assert.equal(n.capacityType, w.capacityType);
        assert.equal(n.priceSource, "kwok");
        assert.ok(
          close(n.costPerHour, w.costPerHour),
          `${n.name}: API ${n.costPerHour} vs hand ${w.costPerHour}`,
        );
        log(`  ${n.name} ${w.instanceType} ${w.capacityType} $${n.costPerHour.toFixed(6)}/h`);
      }

      // The whole cluster (other tests share the rig): retry until one read of the rig and one of
      // the API agree, which they must once nothing moves for a moment.
      const overview = await waitFor(
        "the overview to match all the rig's NodeClaims",
        async () => {
          const all = expectedPool(await list("nodeclaims.karpenter.sh"));
          const o = await api<OverviewDto>("overview");
          const again = expectedPool(await list("nodeclaims.karpenter.sh"));
          const stable = all.nodes === again.nodes && close(all.costPerHour, again.costPerHour);
          return stable && o.nodes === all.nodes && close(o.costPerHour, all.costPerHour)
            ? { o, want: all }
            : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 500 },
      );
      assert.equal(overview.o.priceSources.kwok, overview.want.nodes);
      const spotNodes = overview.want.byCt["spot"] ?? 0;
      assert.ok(close(overview.o.spotRatio.nodes, spotNodes / overview.want.nodes));
      log(
        `overview: ${overview.o.nodes} nodes, API $${overview.o.costPerHour.toFixed(6)}/h = hand ` +
          `$${overview.want.costPerHour.toFixed(6)}/h, spot ratio ${overview.o.spotRatio.nodes.toFixed(3)}`,
      );
    }),
);

test(
  "dashboard e2e: a churning pool is flagged as thrashing with evidence, a calm one is not",
  { timeout: 300_000 },
  () =>
    withRigLogsOnFailure(async () => {
      // Oscillating load under consolidateAfter 0s: 3 pods on 3 nodes, then none, three times —
      // nodes consolidated and launched again for the same demand, repeatedly (docs/thrashing.md).
      const seen = new Set<string>();
      const t0 = Date.now();
      for (let cycle = 1; cycle <= 3; cycle++) {
        await apply(deployment("churn", churn, 3, { spread: true }));
        await waitRunning("churn", 3);
        for (const c of await claimsOf(churn)) seen.add(c.metadata.name);
        await kubectl(["scale", "deployment", "churn", "--replicas=0", "-n", ns]);
        const tc = Date.now();
        await waitFor(
          `the NodeClaims of ${churn} to be consolidated away (cycle ${cycle})`,
          async () => (await claimsOf(churn)).length === 0,
          { timeoutMs: 120_000, intervalMs: 1_000 },
        );
        log(`churn cycle ${cycle}: consolidated in ${((Date.now() - tc) / 1000).toFixed(1)}s`);
      }
      log(`churn: ${seen.size} NodeClaims created and removed in ${((Date.now() - t0) / 1000).toFixed(1)}s`);

      const reports = await waitFor(
        `${churn} to be reported as thrashing`,
        async () => {
          const r = await api<ThrashingDto[]>("thrashing");
          const mine = r.find((x) => x.nodePool === churn);
          return mine?.flagged && mine.evidence.length >= 4 ? r : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 1_000 },
      );
      const flagged = reports.find((x) => x.nodePool === churn);
      assert.ok(flagged);
      log(`thrashing ${churn}: ${flagged.severity} (${flagged.score}) — ${flagged.summary}`);
      for (const e of flagged.evidence) {
        assert.ok(seen.has(e.nodeClaim), `evidence ${e.nodeClaim} is one of the churned NodeClaims`);
        assert.ok(
          e.lifetimeSeconds !== null && e.lifetimeSeconds < 15 * 60,
          `${e.nodeClaim} was short-lived`,
        );
        log(
          `  evidence ${e.nodeClaim} ${e.instanceType ?? "?"} lived ${e.lifetimeSeconds}s (${e.reason ?? "?"})`,
        );
      }
      assert.ok(flagged.advice.length > 0, "advice for the flagged pool");
      log(`  advice: ${flagged.advice.join(" | ")}`);

      const calmReport = reports.find((x) => x.nodePool === calm);
      assert.equal(calmReport?.severity ?? "none", "none", `calm pool ${calm} is not flagged`);
      const pools = await api<NodePoolDto[]>("nodepools");
      assert.equal(pools.find((p) => p.name === churn)?.thrashingFlagged, true);
      assert.equal(pools.find((p) => p.name === calm)?.thrashing, "none");
      assert.equal(pools.find((p) => p.name === calm)?.thrashingFlagged, false);
      const overview = await api<OverviewDto>("overview");
      assert.ok(overview.thrashingPools.includes(churn), "the overview lists the churning pool");
      assert.ok(!overview.thrashingPools.includes(calm), "the overview does not list the calm pool");
    }),
);
