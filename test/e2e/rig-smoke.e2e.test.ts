// Rig smoke test: pending pods -> Karpenter (KWOK provider) launches NodeClaims -> KWOK nodes get
// Ready -> pods Running; spot and on-demand offerings both provision; scale to 0 -> consolidation
// removes the nodes again.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  apply,
  createNamespace,
  deleteNamespace,
  kubectl,
  list,
  remove,
  requireRig,
  waitFor,
  withRigLogsOnFailure,
  type KubeObject,
} from "./harness.ts";
import { applyTaintedPool } from "./pools.ts";
import { CAPACITY_TYPE_LABEL } from "../../src/objects/karpenter.ts";

const PROVISION_TIMEOUT_MS = 120_000;
const CONSOLIDATE_TIMEOUT_MS = 120_000;

let ns = "";
// A NodePool of this test's own (same settings as the rig's `default` pool, plus a taint and a
// label only this test's pods tolerate/select), so leftovers of other runs or tests running in
// parallel cannot absorb its pods or keep its nodes busy.
let pool = "";
const POOL_LABEL = "wave.dev/e2e-pool";

function deployment(name: string, replicas: number, nodeSelector?: Record<string, string>): object {
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
          nodeSelector: { [POOL_LABEL]: pool, ...nodeSelector },
          tolerations: [{ key: POOL_LABEL, operator: "Equal", value: pool, effect: "NoSchedule" }],
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: "app",
              // KWOK never pulls or runs images; any name works.
              image: "pause:3.10",
              resources: { requests: { cpu: "1", memory: "128Mi" } },
            },
          ],
        },
      },
    },
  };
}

async function runningPods(app: string): Promise<KubeObject[]> {
  const pods = await list("pods", { namespace: ns, selector: `app=${app}` });
  return pods.filter((p) => p.status?.phase === "Running" && typeof p.spec?.["nodeName"] === "string");
}

async function waitRunning(app: string, want: number): Promise<KubeObject[]> {
  const t0 = Date.now();
  const pods = await waitFor(
    `${want} Running pods of ${app}`,
    async () => {
      const running = await runningPods(app);
      return running.length === want ? running : undefined;
    },
    { timeoutMs: PROVISION_TIMEOUT_MS, intervalMs: 2_000 },
  );
  process.stderr.write(`# ${app}: ${want} pods Running after ${((Date.now() - t0) / 1000).toFixed(1)}s\n`);
  return pods;
}

async function nodesByName(): Promise<Map<string, KubeObject>> {
  return new Map((await list("nodes")).map((n) => [n.metadata.name, n]));
}

function nodeReady(n: KubeObject | undefined): boolean {
  return n?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

before(async () => {
  await requireRig();
  ns = await createNamespace("rig-smoke");
  pool = ns;
  await applyTaintedPool(pool);
});

after(async () => {
  if (ns !== "") await deleteNamespace(ns);
  // Deleting the NodePool makes Karpenter remove whatever NodeClaims it still owns.
  if (pool !== "") await remove("nodepools.karpenter.sh", pool);
});

test(
  "rig smoke: Karpenter provisions spot and on-demand KWOK nodes and consolidates them",
  { timeout: 600_000 },
  () =>
    withRigLogsOnFailure(async () => {
      // 1. 10 x 1 CPU with no capacity-type constraint: Karpenter picks the cheapest offerings (spot).
      await apply(deployment("spot-10", 10));
      const spotPods = await waitRunning("spot-10", 10);

      // 2. One pod that requires on-demand: needs a new node with the on-demand offering.
      await apply(deployment("on-demand-1", 1, { [CAPACITY_TYPE_LABEL]: "on-demand" }));
      const odPods = await waitRunning("on-demand-1", 1);

      const nodes = await nodesByName();
      const usedNodeNames = new Set([...spotPods, ...odPods].map((p) => String(p.spec?.["nodeName"])));
      for (const name of usedNodeNames) {
        const n = nodes.get(name);
        assert.ok(n, `node ${name} exists`);
        assert.ok(nodeReady(n), `node ${name} is Ready`);
        const labels = n.metadata.labels ?? {};
        assert.equal(labels["kwok.x-k8s.io/node"], "fake", `node ${name} is a KWOK node`);
        assert.equal(labels["karpenter.sh/nodepool"], pool, `node ${name} is from this test's NodePool`);
      }
      const spotTypes = new Set(
        spotPods.map((p) => nodes.get(String(p.spec?.["nodeName"]))?.metadata.labels?.[CAPACITY_TYPE_LABEL]),
      );
      assert.deepEqual(
        [...spotTypes],
        ["spot"],
        "unconstrained pods land on spot capacity (cheapest offering)",
      );
      const odNode = nodes.get(String(odPods[0]?.spec?.["nodeName"]));
      assert.equal(
        odNode?.metadata.labels?.[CAPACITY_TYPE_LABEL],
        "on-demand",
        "the on-demand pod runs on on-demand capacity",
      );

      // Every node the pods use is backed by a NodeClaim that becomes Launched, Registered and Initialized.
      const claims = await waitFor(
        "one Launched+Registered+Initialized NodeClaim per node used",
        async () => {
          const mine = (await list("nodeclaims.karpenter.sh")).filter((c) =>
            usedNodeNames.has(String(c.status?.["nodeName"])),
          );
          const done = mine.every((c) =>
            ["Launched", "Registered", "Initialized"].every(
              (t) => c.status?.conditions?.find((x) => x.type === t)?.status === "True",
            ),
          );
          return mine.length === usedNodeNames.size && done ? mine : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 1_000 },
      );
      const claimNames = new Set(claims.map((c) => c.metadata.name));
      process.stderr.write(
        `# nodeclaims: ${[...claims].map((c) => `${c.metadata.name}(${c.metadata.labels?.["node.kubernetes.io/instance-type"] ?? "?"},${c.metadata.labels?.[CAPACITY_TYPE_LABEL] ?? "?"})`).join(" ")}\n`,
      );

      // 3. Scale to 0: the nodes become empty and Karpenter consolidates them away.
      const t0 = Date.now();
      await kubectl(["scale", "deployment", "spot-10", "on-demand-1", "--replicas=0", "-n", ns]);
      await waitFor(
        "the NodeClaims of this test to be consolidated away",
        async () => {
          const left = (await list("nodeclaims.karpenter.sh")).filter((c) => claimNames.has(c.metadata.name));
          return left.length === 0;
        },
        { timeoutMs: CONSOLIDATE_TIMEOUT_MS, intervalMs: 2_000 },
      );
      process.stderr.write(
        `# consolidated ${claimNames.size} NodeClaims in ${((Date.now() - t0) / 1000).toFixed(1)}s\n`,
      );
      const remaining = await list("nodeclaims.karpenter.sh");
      process.stderr.write(`# NodeClaims left in the cluster: ${remaining.length}\n`);
    }),
);
