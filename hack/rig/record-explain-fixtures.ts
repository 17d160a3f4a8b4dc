// Records the Events Karpenter writes about why it will not disrupt a node or launch one for a pod
// (issue 34), as the running rig's Karpenter writes them, into
// src/karpenter/events/fixtures/<karpenter version>/rig-events.json — read by the explain parser's
// fixture test. Run on a rig that is up (any pair):
//
//   node hack/rig/record-explain-fixtures.ts
//
// One namespace and NodePools of its own (tainted, so nothing else lands there), each showing one
// blocker: a do-not-disrupt pod, a PDB allowing 0 disruptions, a budget of 0 nodes (with and
// without a schedule), WhenEmpty with a pod on the node, consolidation disabled (`Never`), a node
// annotated do-not-disrupt; and two pods Karpenter cannot launch for: a requirement no NodePool
// offers, and a NodePool at its cpu limit. It waits until each expected Event reason was seen (or
// 300 s), keeps every Karpenter Event about its objects (managedFields dropped), then deletes all.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { kubectl, readState, repoRoot, sleep } from "./lib.ts";

const NS = "wave-rec-explain";
const LABEL = "wave.dev/rec-explain-pool";
const P = "wave-rec-x";

interface Obj {
  metadata: { name: string; namespace?: string; managedFields?: unknown };
  [k: string]: unknown;
}

async function getJson<T>(args: string[]): Promise<T> {
  return JSON.parse(await kubectl([...args, "-o", "json"])) as T;
}

async function apply(o: object): Promise<void> {
  await kubectl(["apply", "-f", "-"], JSON.stringify(o));
}

async function pool(
  name: string,
  disruption: Record<string, unknown>,
  limits?: Record<string, string>,
  extraTaints: object[] = [],
): Promise<void> {
  const def = await getJson<{
    spec: { template: { spec: Record<string, unknown> } } & Record<string, unknown>;
  }>(["get", "nodepool", "default"]);
  const reqs = (def.spec.template.spec["requirements"] as object[] | undefined) ?? [];
  await apply({
    apiVersion: "karpenter.sh/v1",
    kind: "NodePool",
    metadata: { name },
    spec: {
      ...def.spec,
      disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "5s", ...disruption },
      ...(limits ? { limits } : { limits: { cpu: "100" } }),
      template: {
        metadata: { labels: { [LABEL]: name } },
        spec: {
          ...def.spec.template.spec,
          requirements: [...reqs, { key: "karpenter.kwok.sh/instance-cpu", operator: "In", values: ["4"] }],
          taints: [{ key: LABEL, value: name, effect: "NoSchedule" }, ...extraTaints],
        },
      },
    },
  });
}

function pod(
  name: string,
  poolName: string,
  o: { annotations?: Record<string, string>; cpu?: string; nodeSelector?: Record<string, string> } = {},
): object {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: NS,
      labels: { app: name },
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
    spec: {
      nodeSelector: o.nodeSelector ?? { [LABEL]: poolName },
      tolerations: [{ key: LABEL, operator: "Exists", effect: "NoSchedule" }],
      terminationGracePeriodSeconds: 0,
      containers: [
        { name: "app", image: "pause:3.10", resources: { requests: { cpu: o.cpu ?? "1", memory: "128Mi" } } },
      ],
    },
  };
}

const WANT = ["DisruptionBlocked", "Unconsolidatable", "FailedScheduling"];

async function main(): Promise<void> {
  const version = readState()?.pair?.karpenter;
  if (!version) throw new Error("no running rig with a known pair: `npm run cluster:status`");
  const pools = {
    dnd: `${P}-dnd`,
    pdb: `${P}-pdb`,
    budget: `${P}-budget`,
    sched: `${P}-budget-sched`,
    empty: `${P}-whenempty`,
    never: `${P}-never`,
    node: `${P}-node-dnd`,
    limit: `${P}-limit`,
    tainted: `${P}-tainted`,
  };
  await kubectl(["delete", "namespace", NS, "--ignore-not-found", "--wait=true"], undefined, 120_000);
  await kubectl(["create", "namespace", NS]);
  for (let i = 0; i < 50; i++) {
    if ((await kubectl(["get", "serviceaccount", "default", "-n", NS, "--ignore-not-found"])).trim()) break;
    await sleep(200);
  }
  await pool(pools.dnd, {});
  await pool(pools.pdb, {});
  await pool(pools.budget, { budgets: [{ nodes: "0" }] });
  // A budget of 0 during business hours, every day: closed all day here (a 24 h window).
  await pool(pools.sched, { budgets: [{ nodes: "0", schedule: "0 0 * * *", duration: "24h" }] });
  await pool(pools.empty, { consolidationPolicy: "WhenEmpty" });
  await pool(pools.never, { consolidateAfter: "Never" });
  await pool(pools.node, {});
  await pool(pools.limit, {}, { cpu: "4" });
  // A pool whose extra taint no pod here tolerates: FailedScheduling's "did not tolerate" part.
  await pool(pools.tainted, {}, undefined, [{ key: `${LABEL}-gpu`, value: "true", effect: "NoSchedule" }]);
  await apply(pod("dnd", pools.dnd, { annotations: { "karpenter.sh/do-not-disrupt": "true" } }));
  await apply(pod("guarded", pools.pdb));
  await apply({
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: { name: "guarded", namespace: NS },
    spec: { maxUnavailable: 0, selector: { matchLabels: { app: "guarded" } } },
  });
  await apply(pod("budgeted", pools.budget));
  await apply(pod("scheduled", pools.sched));
  await apply(pod("not-empty", pools.empty));
  await apply(pod("never", pools.never));
  await apply(pod("node-dnd", pools.node));
  await apply(pod("at-limit-1", pools.limit, { cpu: "3" }));
  // No NodePool offers this value of the label key.
  await apply(pod("no-pool", pools.dnd, { nodeSelector: { [LABEL]: "no-such-pool" } }));
  // Delete the budget pools' pods once they run: empty nodes a 0 budget keeps.
  await apply(pod("untolerated", pools.tainted));
  const deadline = Date.now() + 300_000;
  let phase = 0;
  let events: Obj[];
  for (;;) {
    const pods = (
      await getJson<{ items: (Obj & { spec: { nodeName?: string } })[] }>(["get", "pods", "-n", NS])
    ).items;
    const on = (n: string): string | undefined => pods.find((p) => p.metadata.name === n)?.spec.nodeName;
    if (phase === 0 && on("budgeted") && on("scheduled") && on("node-dnd") && on("at-limit-1")) {
      await kubectl(["delete", "pod", "budgeted", "scheduled", "-n", NS, "--wait=false"]);
      await kubectl([
        "annotate",
        "node",
        on("node-dnd") ?? "",
        "karpenter.sh/do-not-disrupt=true",
        "--overwrite",
      ]);
      await apply(pod("at-limit-2", pools.limit, { cpu: "3" }));
      phase = 1;
    }
    const all = (await getJson<{ items: Obj[] }>(["get", "events", "-A"])).items;
    events = all.filter((e) => {
      const src =
        (e["reportingComponent"] as string | undefined) ||
        (e["source"] as { component?: string } | undefined)?.component;
      const io = e["involvedObject"] as { name?: string; namespace?: string };
      const poolNames = Object.values(pools);
      return (
        src === "karpenter" &&
        (io.namespace === NS ||
          poolNames.includes(io.name ?? "") ||
          poolNames.some((p) => (io.name ?? "").startsWith(`${p}-`)) ||
          pods.some((p) => p.spec.nodeName === io.name))
      );
    });
    const seen = new Set(events.map((e) => String(e["reason"])));
    const messages = events.map((e) => String(e["message"]));
    const done =
      phase === 1 &&
      WANT.every((r) => seen.has(r)) &&
      messages.some((m) => m.includes("exceed limits")) &&
      messages.some((m) => m.includes("did not tolerate")) &&
      messages.some((m) => m.startsWith("Pdb prevents")) &&
      messages.some((m) => m.startsWith('Pod has "karpenter.sh/do-not-disrupt"')) &&
      messages.some((m) => m.startsWith("Disruption is blocked")) &&
      messages.some((m) => m.includes("blocking budget")) &&
      messages.some((m) => m.includes("WhenEmpty"));
    if (done || Date.now() > deadline) break;
    await sleep(3000);
  }
  const clean = events.map((e) => {
    const { managedFields: _drop, ...metadata } = e.metadata;
    return { ...e, metadata };
  });
  const out = join(repoRoot, "src", "karpenter", "events", "fixtures", version);
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, "rig-events.json"), JSON.stringify(clean, null, 2) + "\n");
  writeFileSync(
    join(out, "rig.json"),
    JSON.stringify(
      {
        pair: readState()?.pair,
        recordedAt: new Date().toISOString(),
        script: "hack/rig/record-explain-fixtures.ts",
      },
      null,
      2,
    ) + "\n",
  );
  spawnSync(join(repoRoot, "node_modules", ".bin", "prettier"), ["--write", out], { stdio: "ignore" });
  process.stderr.write(
    `[record] ${out}: ${clean.length} Karpenter events (${[...new Set(events.map((e) => String(e["reason"])))].join(", ")})\n`,
  );
  await kubectl(["delete", "namespace", NS, "--wait=false"]);
  for (const p of Object.values(pools)) await kubectl(["delete", "nodepool", p, "--wait=false"]);
}

main().catch((e: unknown) => {
  process.stderr.write(`[record] FAILED: ${(e as Error).message}\n`);
  process.exit(1);
});
