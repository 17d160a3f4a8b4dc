// Issue 39 on the rig (Karpenter v1.15.0, gate NodeOverlay on): a NodeOverlay −30 % on one
// instance type, scoped by its requirements to this test's own NodePool (its template label), so
// other tests' nodes keep their list price. Karpenter launches a node of that type; every figure
// of the node — node $/h (table and drawer), pool $/h, cluster $/h, consolidation "would save" —
// is the adjusted price to 1e-6, in Wave's API and /metrics.
//
// Karpenter's own price: v1.15.0's core exports no offering price metric (its metrics port has
// none — `karpenter_cloudprovider_instance_type_offering_price_estimate` is the AWS provider's,
// not the KWOK provider's), so the test compares with the value Karpenter's overlay code computes:
// the KWOK provider's list price (its generated instance types, the formula below) through
// `AdjustedPrice` (pkg/cloudprovider/types.go): list × (1 + (−30)/100), restated here apart from
// Wave's src/karpenter/overlay.ts.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type {
  ConsolidationViewDto,
  NodeDetailDto,
  NodeListDto,
  NodePoolDto,
  OverviewDto,
} from "../../src/dashboard/dto.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  get,
  list,
  remove,
  requireRig,
  waitFor,
  withRigLogsOnFailure,
} from "./harness.ts";
import { startWaveOnRig, type InProcessWave } from "./wave-in-process.ts";
import { applyTaintedPool, kwokOnDemand, POOL_LABEL } from "./pools.ts";
import { parseExposition, sumOf } from "./crosscheck.ts";
import { readState } from "../../hack/rig/lib.ts";

/**
 * Why this rig cannot run the test: Karpenter before v1.8 has no NodeOverlay, and with the gate
 * off it ignores them (and Wave, seeing no validated overlay, prices the list price).
 */
function unsupported(): string | undefined {
  const gates = readState()?.gates ?? "";
  return /(^|,)NodeOverlay=true(,|$)/.test(gates)
    ? undefined
    : `the rig's Karpenter runs without the NodeOverlay gate (gates: "${gates}")`;
}
const skip = unsupported();

const CLUSTER = "e2e-node-overlay";
const TYPE = "c-2x-amd64-linux";
const CHANGE = -30;

let ns = "";
let pool = "";
let overlay = "";
let running: InProcessWave | undefined;

const log = (msg: string): void => void process.stderr.write(`# ${msg}\n`);

const api = <T>(path: string): Promise<T> => {
  assert.ok(running);
  return running.api<T>(path);
};

const metrics = (): Promise<ReturnType<typeof parseExposition>> => {
  assert.ok(running);
  return running.metrics();
};

/** Karpenter's AdjustedPrice for a signed percentage, floored at 0. */
const adjusted = (list: number, percent: number): number => Math.max(0, list * (1 + percent / 100));

const near = (a: number | null | undefined, b: number): boolean => a != null && Math.abs(a - b) < 1e-6;

before(async () => {
  await requireRig();
  if (skip) return;
  ns = await createNamespace("overlay");
  pool = `${ns}-pool`;
  overlay = `${ns}-savings-plan`;
  // On-demand of one type only; a budget of 0 keeps the emptied node so consolidation's saving stays on show.
  await applyTaintedPool(pool, {
    capacityTypes: ["on-demand"],
    requirements: [{ key: "node.kubernetes.io/instance-type", operator: "In", values: [TYPE] }],
    disruption: {
      consolidationPolicy: "WhenEmptyOrUnderutilized",
      consolidateAfter: "0s",
      budgets: [{ nodes: "0" }],
    },
  });
  await apply({
    apiVersion: "karpenter.sh/v1alpha1",
    kind: "NodeOverlay",
    metadata: { name: overlay },
    spec: {
      requirements: [
        { key: "node.kubernetes.io/instance-type", operator: "In", values: [TYPE] },
        { key: POOL_LABEL, operator: "In", values: [pool] },
      ],
      priceAdjustment: `${CHANGE}%`,
      weight: 10,
    },
  });
  running = await startWaveOnRig(CLUSTER, ns);
});

after(async () => {
  await running?.stop();
  if (ns !== "") await deleteNamespace(ns);
  if (pool !== "") await remove("nodepools.karpenter.sh", pool);
  if (overlay !== "") await remove("nodeoverlays.karpenter.sh", overlay);
});

test(
  "a NodeOverlay −30 %: node, pool, cluster $/h and consolidation's saving are Karpenter's adjusted price",
  { timeout: 300_000, ...(skip ? { skip } : {}) },
  () =>
    withRigLogsOnFailure(async () => {
      await waitFor(
        "Karpenter validated the overlay",
        async () =>
          (await get("nodeoverlays.karpenter.sh", overlay))?.status?.conditions?.some(
            (c) => c.type === "ValidationSucceeded" && c.status === "True",
          ) ?? false,
        { timeoutMs: 60_000 },
      );
      await apply({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "app", namespace: ns },
        spec: {
          nodeSelector: { [POOL_LABEL]: pool },
          tolerations: [{ key: POOL_LABEL, operator: "Equal", value: pool, effect: "NoSchedule" }],
          terminationGracePeriodSeconds: 0,
          containers: [
            { name: "app", image: "pause:3.10", resources: { requests: { cpu: "500m", memory: "64Mi" } } },
          ],
        },
      });
      const node = await waitFor(
        "a node of the pool",
        async () => (await list("nodes", { selector: `${POOL_LABEL}=${pool}` }))[0]?.metadata.name,
        { timeoutMs: 120_000 },
      );
      const list$ = kwokOnDemand(TYPE);
      const want = adjusted(list$, CHANGE);
      log(`node ${node}: list ${list$} $/h, Karpenter's price ${want} $/h`);
      // Emptied: consolidation would delete it and save its whole (adjusted) price; the budget holds it.
      await remove("pod", "app", ns);

      const figures = await waitFor(
        "Wave's figures at the adjusted price",
        async () => {
          const rows = (await api<NodeListDto>("nodes?limit=5000")).items;
          const row = rows.find((r) => r.name === node);
          const overview = await api<OverviewDto>("overview");
          const others = rows.filter((r) => r.name !== node).reduce((s, r) => s + r.costPerHour, 0);
          const poolDto = (await api<NodePoolDto[]>("nodepools")).find((p) => p.name === pool);
          const explained = (await api<ConsolidationViewDto>("consolidation")).items.find(
            (i) => i.node === node,
          );
          const drawer = await api<NodeDetailDto>(`nodes/${node}`);
          const m = await metrics();
          const f = {
            row: row?.costPerHour,
            pricedBy: row?.pricedBy,
            listPrice: row?.listPricePerHour,
            drawer: drawer.price.usdPerHour,
            drawerList: drawer.price.listUsdPerHour,
            pool: poolDto?.costPerHour,
            // Other tests' nodes come and go: the cluster's $/h less theirs, read together.
            cluster: overview.costPerHour - others,
            saves: explained?.savingsPerHour,
            metricsPool: sumOf(m, "wave_nodepool_cost_per_hour_dollars", {
              cluster: CLUSTER,
              nodepool: pool,
            }),
            metricsBlocked: sumOf(m, "wave_nodepool_consolidation_blocked_cost_per_hour_dollars", {
              cluster: CLUSTER,
              nodepool: pool,
            }),
          };
          const ok =
            near(f.row, want) &&
            near(f.drawer, want) &&
            near(f.pool, want) &&
            near(f.cluster, want) &&
            near(f.saves, want) &&
            near(f.metricsPool, want) &&
            near(f.metricsBlocked, want);
          if (!ok) log(`not yet: ${JSON.stringify(f)}`);
          return ok ? f : undefined;
        },
        { timeoutMs: 90_000, intervalMs: 2_000 },
      );
      assert.equal(figures.pricedBy, `overlay ${overlay} ${CHANGE}%`);
      assert.ok(near(figures.listPrice, list$), "the list price beside it");
      assert.ok(near(figures.drawerList, list$), "the drawer's list price");
      log(`figures: ${JSON.stringify(figures)}`);
    }),
);
