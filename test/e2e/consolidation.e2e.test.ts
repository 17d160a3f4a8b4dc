// Issue 34 on the rig: Wave (startWave: agent + core + API in this process) explains why the real
// Karpenter does not consolidate a node, and why a pod is pending.
//
// Blockers: per blocker a NodePool of its own (on-demand only, so Karpenter may replace a node by
// a cheaper one). Each pool gets one node holding a small pod `x` and a 3-CPU pod `big`, launched
// together; deleting `big` leaves the node under-used (Karpenter would replace it by a 1-vCPU
// one) — unless the blocker stops it: a PDB allowing 0 for `x`, `x` carrying do-not-disrupt, the
// pool's budget "0", WhenEmpty, consolidateAfter 1h. Wave must name each (reason, object) with
// what consolidation would save within 60 s; then the blocker is removed, Karpenter replaces the
// node, and Wave no longer lists it.
//
// Pending: a pod with a requirement no NodePool offers and a pod larger than its pool's limit;
// the reasons in GET …/pending must be Karpenter's FailedScheduling on the pod, read per pool.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { ConsolidationViewDto, NodeDisruptionDto, PendingViewDto } from "../../src/dashboard/dto.ts";
import { startWave, type Started } from "../../src/cli/start.ts";
import { DEFAULTS } from "../../src/config/config.ts";
import { parseSchedulingMessage } from "../../src/karpenter/events/parse.ts";
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
import { applyTaintedPool, POOL_LABEL } from "./pools.ts";

const CLUSTER = "e2e-consolidation";
const BLOCKERS = ["pdb", "dnd", "budget", "whenempty", "after"] as const;
type Blocker = (typeof BLOCKERS)[number];

let ns = "";
const pools: string[] = [];
let wave: Started | undefined;
let dataDir = "";

const log = (msg: string): void => void process.stderr.write(`# ${msg}\n`);

async function api<T>(path: string): Promise<T> {
  assert.ok(wave);
  const res = await fetch(new URL(`api/v1/clusters/${CLUSTER}/${path}`, wave.url), {
    headers: { authorization: `Bearer ${wave.tokens.viewer}` },
  });
  assert.equal(res.status, 200, `GET ${path}: ${res.status} ${await res.clone().text()}`);
  return (await res.json()) as T;
}

/** KWOK's price formula by hand (kwok/tools/gen_instance_types.go), on-demand. */
function kwokOnDemand(instanceType: string): number {
  const m = /^([csm])-(\d+)x-/.exec(instanceType);
  assert.ok(m?.[1] && m[2], instanceType);
  const vcpu = Number(m[2]);
  return 0.025 * vcpu + (0.001 * vcpu * { c: 2, s: 4, m: 8 }[m[1] as "c" | "s" | "m"] * 2 ** 30) / 1e9;
}

const placement = (pool: string) => ({
  nodeSelector: { [POOL_LABEL]: pool },
  tolerations: [{ key: POOL_LABEL, operator: "Equal", value: pool, effect: "NoSchedule" }],
  terminationGracePeriodSeconds: 0,
});

/** A Deployment of one pod (recreated if the rig evicts it, e.g. by a taint at registration). */
function deployment(
  name: string,
  pool: string,
  cpu: string,
  annotations: Record<string, string> = {},
): object {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name }, annotations },
        spec: {
          ...placement(pool),
          containers: [
            { name: "app", image: "pause:3.10", resources: { requests: { cpu, memory: "64Mi" } } },
          ],
        },
      },
    },
  };
}

function pod(name: string, pool: string, cpu: string, extra: Record<string, string> = {}): object {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: ns },
    spec: {
      ...placement(pool),
      nodeSelector: { [POOL_LABEL]: pool, ...extra },
      containers: [{ name: "app", image: "pause:3.10", resources: { requests: { cpu, memory: "64Mi" } } }],
    },
  };
}

const poolOf = (b: Blocker): string => `${ns}-${b}`;

before(async () => {
  await requireRig();
  ns = await createNamespace("consol");
  const disruption: Record<Blocker, Record<string, unknown>> = {
    pdb: {},
    dnd: {},
    budget: { budgets: [{ nodes: "0" }] },
    whenempty: { consolidationPolicy: "WhenEmpty" },
    after: { consolidateAfter: "1h" },
  };
  for (const b of BLOCKERS) {
    pools.push(poolOf(b));
    await applyTaintedPool(poolOf(b), { capacityTypes: ["on-demand"], disruption: disruption[b] });
  }
  pools.push(`${ns}-rack`, `${ns}-limited`);
  await applyTaintedPool(`${ns}-rack`, { capacityTypes: ["on-demand"] });
  await applyTaintedPool(`${ns}-limited`, { capacityTypes: ["on-demand"], limits: { cpu: "1" } });
  dataDir = mkdtempSync(join(tmpdir(), "wave-consolidation-e2e-"));
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
  for (const p of pools) await remove("nodepools.karpenter.sh", p);
});

/** The one node both `x-<b>` and `big-<b>` run on. */
async function nodeOf(b: Blocker): Promise<string> {
  return waitFor(
    `x-${b} and big-${b} Running on one node`,
    async () => {
      const ps = await list("pods", { namespace: ns });
      const x = ps.find(
        (p) => (p.metadata.labels ?? {})["app"] === `x-${b}` && p.status?.phase === "Running",
      );
      const big = ps.find(
        (p) => (p.metadata.labels ?? {})["app"] === `big-${b}` && p.status?.phase === "Running",
      );
      const nx = (x?.spec as { nodeName?: string } | undefined)?.nodeName;
      const nb = (big?.spec as { nodeName?: string } | undefined)?.nodeName;
      return x?.status?.phase === "Running" && big?.status?.phase === "Running" && nx === nb ? nx : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 1_000 },
  );
}

/**
 * Per blocker: its reason and object. consolidateAfter not yet elapsed is a wait, not a blocker
 * (docs/consolidation.md): it ends by itself, so it is `waiting`, never `blocking`.
 */
const EXPECTED: Record<
  Blocker,
  { reason: string; kind: string; name: (node: string) => string; waits?: true }
> = {
  pdb: { reason: "pdb", kind: "PodDisruptionBudget", name: () => "x-pdb" },
  dnd: { reason: "do-not-disrupt-pod", kind: "Pod", name: () => "" },
  budget: { reason: "budget", kind: "NodePool", name: () => poolOf("budget") },
  whenempty: { reason: "when-empty", kind: "NodePool", name: () => poolOf("whenempty") },
  after: { reason: "consolidate-after", kind: "NodePool", name: () => poolOf("after"), waits: true },
};

async function removeBlocker(b: Blocker, xPod: string): Promise<void> {
  switch (b) {
    case "pdb":
      return remove("poddisruptionbudget", "x-pdb", ns);
    case "dnd":
      await kubectl(["annotate", "pod", "-n", ns, xPod, "karpenter.sh/do-not-disrupt-"]);
      return;
    case "budget":
      await kubectl([
        "patch",
        "nodepool",
        poolOf(b),
        "--type",
        "merge",
        "-p",
        '{"spec":{"disruption":{"budgets":[{"nodes":"1"}]}}}',
      ]);
      return;
    case "whenempty":
      await kubectl([
        "patch",
        "nodepool",
        poolOf(b),
        "--type",
        "merge",
        "-p",
        '{"spec":{"disruption":{"consolidationPolicy":"WhenEmptyOrUnderutilized"}}}',
      ]);
      return;
    case "after":
      await kubectl([
        "patch",
        "nodepool",
        poolOf(b),
        "--type",
        "merge",
        "-p",
        '{"spec":{"disruption":{"consolidateAfter":"10s"}}}',
      ]);
      return;
  }
}

test(
  "consolidation blockers on the rig: each explained with its object and cost within 60 s, resolved once removed",
  { timeout: 720_000 },
  () =>
    withRigLogsOnFailure(async () => {
      // Launch each pool's node with x and big together.
      for (const b of BLOCKERS) {
        await apply(
          deployment(
            `x-${b}`,
            poolOf(b),
            "100m",
            b === "dnd" ? { "karpenter.sh/do-not-disrupt": "true" } : {},
          ),
        );
        await apply(deployment(`big-${b}`, poolOf(b), "3"));
        if (b === "pdb")
          await apply({
            apiVersion: "policy/v1",
            kind: "PodDisruptionBudget",
            metadata: { name: "x-pdb", namespace: ns },
            spec: { minAvailable: 1, selector: { matchLabels: { app: "x-pdb" } } },
          });
      }
      const nodes = new Map<Blocker, string>();
      for (const b of BLOCKERS) nodes.set(b, await nodeOf(b));
      log(`nodes: ${[...nodes].map(([b, n]) => `${b}=${n}`).join(" ")}`);
      // The blocker is produced: the node is now under-used.
      const t0 = Date.now();
      for (const b of BLOCKERS) await remove("deployment", `big-${b}`, ns);
      const xPods = new Map<Blocker, string>();
      for (const p of await list("pods", { namespace: ns })) {
        const app = (p.metadata.labels ?? {})["app"] ?? "";
        const b = BLOCKERS.find((x) => `x-${x}` === app);
        if (b) xPods.set(b, p.metadata.name);
      }
      const explained = await waitFor(
        "every blocker explained in GET …/consolidation",
        async () => {
          const v = await api<ConsolidationViewDto>("consolidation");
          const out = new Map<Blocker, NodeDisruptionDto>();
          for (const b of BLOCKERS) {
            const n = v.items.find((i) => i.node === nodes.get(b));
            const e = EXPECTED[b];
            const want = b === "dnd" ? (xPods.get(b) ?? "?") : e.name(n?.node ?? "");
            const seen = n?.blockers.some(
              (x) =>
                x.reason === e.reason &&
                x.object.kind === e.kind &&
                x.object.name === want &&
                (e.waits ? x.waiting && !x.blocking : x.blocking),
            );
            if (!n || !seen || n.savingsPerHour <= 0) {
              log(`${b}: not yet explained: ${JSON.stringify(n ?? null)}`);
              return undefined;
            }
            out.set(b, n);
          }
          return out;
        },
        { timeoutMs: 60_000, intervalMs: 1_000 },
      );
      log(`all 5 explained ${((Date.now() - t0) / 1000).toFixed(1)} s after the blockers were produced`);
      for (const [b, n] of explained) {
        const it = n.replacement?.instanceType ?? "";
        // What it costs: the node's KWOK price minus the cheapest size that holds what is left.
        assert.equal(n.action, "replace", b);
        assert.ok(
          n.costPerHour !== null &&
            Math.abs(
              n.costPerHour -
                kwokOnDemand(
                  (await list("nodes", {})).find((x) => x.metadata.name === n.node)?.metadata.labels?.[
                    "node.kubernetes.io/instance-type"
                  ] ?? "",
                ),
            ) < 1e-9,
          `${b}: node price`,
        );
        assert.ok(Math.abs(n.savingsPerHour - (n.costPerHour - kwokOnDemand(it))) < 1e-9, `${b}: savings`);
        assert.ok(n.blockers.find((x) => x.reason === EXPECTED[b].reason)?.fix, `${b}: a fix`);
        log(
          `${b}: ${n.node} blocked by ${EXPECTED[b].reason}, saves ${n.savingsPerHour.toFixed(4)} $/h (→ ${it})`,
        );
      }
      // Karpenter held off meanwhile: every node is still there.
      const claims = await list("nodeclaims.karpenter.sh", {});
      for (const [b, n] of nodes)
        assert.ok(
          claims.some((c) => (c.status as { nodeName?: string } | undefined)?.nodeName === n),
          `${b}: ${n} still there`,
        );

      // Remove every blocker: Karpenter consolidates each node, and Wave shows it resolved.
      const t1 = Date.now();
      for (const b of BLOCKERS) await removeBlocker(b, xPods.get(b) ?? "");
      await waitFor(
        "every blocked node consolidated by Karpenter and gone from Wave's blocked list",
        async () => {
          const live = new Set((await list("nodes", {})).map((n) => n.metadata.name));
          const v = await api<ConsolidationViewDto>("consolidation");
          const left = [...nodes].filter(
            ([, n]) => live.has(n) || v.items.some((i) => i.node === n && !i.disruptable),
          );
          if (left.length > 0) log(`waiting for ${left.map(([b]) => b).join(", ")}`);
          return left.length === 0;
        },
        // Karpenter disrupts one command at a time, other files' pools included (the second lane).
        { timeoutMs: 420_000, intervalMs: 5_000 },
      );
      log(
        `all 5 consolidated and resolved ${((Date.now() - t1) / 1000).toFixed(1)} s after the blockers were removed`,
      );
    }),
);

test(
  "pending pods on the rig: a requirement no NodePool offers and a pool at its limit, as Karpenter's Events say",
  { timeout: 180_000 },
  () =>
    withRigLogsOnFailure(async () => {
      await apply(pod("rack", `${ns}-rack`, "100m", { "example.com/rack": "r9" }));
      await apply(pod("huge", `${ns}-limited`, "1500m"));
      const karpenterSays = async (name: string): Promise<KubeObject | undefined> => {
        const evs = await list("events", { namespace: ns });
        return evs
          .filter((e) => {
            const ev = e as KubeObject & {
              involvedObject?: { name?: string };
              reason?: string;
              source?: { component?: string };
              reportingComponent?: string;
            };
            return (
              ev.involvedObject?.name === name &&
              ev.reason === "FailedScheduling" &&
              /karpenter/.test(ev.reportingComponent ?? ev.source?.component ?? "")
            );
          })
          .at(-1);
      };
      const t0 = Date.now();
      const v = await waitFor(
        "both pending pods with Karpenter's reasons in GET …/pending",
        async () => {
          const p = await api<PendingViewDto>("pending");
          const rack = p.pods.find((x) => x.namespace === ns && x.name === "rack");
          const huge = p.pods.find((x) => x.namespace === ns && x.name === "huge");
          const ok =
            rack?.reasons.some(
              (r) => r.nodePool === `${ns}-rack` && r.kind === "requirement" && r.key === "example.com/rack",
            ) && huge?.reasons.some((r) => r.nodePool === `${ns}-limited` && r.kind === "limit");
          if (!ok)
            log(
              `pending: ${JSON.stringify([rack, huge].map((x) => x && { name: x.name, reasons: x.reasons.filter((r) => r.nodePool?.startsWith(ns) ?? true), last: x.lastEvent }))}`,
            );
          return ok ? { rack, huge } : undefined;
        },
        { timeoutMs: 90_000, intervalMs: 2_000 },
      );
      log(`pending reasons in the API ${((Date.now() - t0) / 1000).toFixed(1)} s after the pods were made`);
      for (const [name, got] of Object.entries(v)) {
        const message = (await karpenterSays(name))?.["message"];
        assert.ok(typeof message === "string", `${name}: Karpenter's FailedScheduling Event`);
        assert.ok(got, name);
        // The API's reasons are Karpenter's message on the pod, part by part (the pools it left
        // unnamed named from the NodePools' taints and labels); listed cheapest fix first, so the
        // parts are compared as a multiset and the order by cost.
        assert.deepEqual(
          got.reasons.map((r) => r.detail).sort(),
          parseSchedulingMessage(message)
            .map((r) => r.detail)
            .sort(),
          name,
        );
        const costs = got.reasons.map((r) => r.costPerHour ?? Infinity);
        assert.deepEqual(
          costs,
          [...costs].sort((a, b) => a - b),
          `${name}: cheapest fix first`,
        );
        assert.ok(got.waitingSeconds > 0);
        log(
          `${name}: ${got.reasons
            .filter((r) => r.nodePool?.startsWith(ns))
            .map((r) => r.text)
            .join("; ")}`,
        );
      }
    }),
);
