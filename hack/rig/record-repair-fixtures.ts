// Records v1.15 node repair and reboot as the running rig's Karpenter writes them (gate NodeRepair)
// into src/karpenter/events/fixtures/<karpenter version>/repair-rig-*.json, read by
// src/core/lifecycle/repair.test.ts and src/karpenter/events/fixtures.test.ts:
//
//   node hack/rig/record-repair-fixtures.ts
//
// A static NodePool of its own (replicas 1, one KWOK instance type: a static NodeClaim carries only
// its pool's requirements). Its node gets the condition KWOKUnhealthy=True — KWOK's repair policy
// (30 s toleration, ReplaceNode) — and Karpenter replaces it; the replacement gets
// KWOKRebootRequired=True (RebootNode) and Karpenter reboots it in place. Every Karpenter Event
// about the pool's objects is kept (managedFields dropped), and the rebooted NodeClaim once its
// reboot ended. The pool is deleted at the end.
import { randomBytes } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { kubectl, readState, repoRoot, sleep } from "./lib.ts";

type Obj = { metadata: { name: string; managedFields?: unknown }; [k: string]: unknown };
type Cond = { type: string; status: string; reason?: string };
const LABEL = "wave.dev/record-pool";

const getJson = async <T>(args: string[]): Promise<T> =>
  JSON.parse(await kubectl([...args, "-o", "json"])) as T;
const conds = (o: Obj): Cond[] => (o["status"] as { conditions?: Cond[] } | undefined)?.conditions ?? [];
const stamp = (e: Obj): string => (typeof e["firstTimestamp"] === "string" ? e["firstTimestamp"] : "");
const clean = (o: Obj): Obj => {
  const { managedFields: _drop, ...metadata } = o.metadata;
  return { ...o, metadata };
};

async function until<T>(what: string, f: () => Promise<T | undefined>, ms = 240_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(2_000);
  }
}

async function mark(node: string, type: string): Promise<void> {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const condition = {
    type,
    status: "True",
    reason: "WaveFixture",
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  };
  await kubectl([
    "patch",
    "node",
    node,
    "--subresource=status",
    "--type=strategic",
    "-p",
    JSON.stringify({ status: { conditions: [condition] } }),
  ]);
}

async function claims(pool: string): Promise<Obj[]> {
  return (await getJson<{ items: Obj[] }>(["get", "nodeclaims", "-l", `karpenter.sh/nodepool=${pool}`]))
    .items;
}

async function record(pool: string, out: string): Promise<void> {
  const def = await getJson<{
    spec: { disruption?: unknown; template: { spec: { requirements?: unknown[] } } };
  }>(["get", "nodepool", "default"]);
  const tmpl = def.spec.template.spec;
  const spec = {
    disruption: def.spec.disruption,
    limits: { nodes: "3" },
    replicas: 1,
    template: {
      metadata: { labels: { [LABEL]: pool } },
      spec: {
        ...tmpl,
        requirements: [
          ...(tmpl.requirements ?? []),
          { key: "node.kubernetes.io/instance-type", operator: "In", values: ["c-1x-amd64-linux"] },
        ],
        taints: [{ key: LABEL, value: pool, effect: "NoSchedule" }],
      },
    },
  };
  await kubectl(
    ["apply", "-f", "-"],
    JSON.stringify({ apiVersion: "karpenter.sh/v1", kind: "NodePool", metadata: { name: pool }, spec }),
  );
  const nodeOf = (c: Obj): string | undefined => (c["status"] as { nodeName?: string } | undefined)?.nodeName;
  const ready = (c: Obj): boolean => conds(c).some((x) => x.type === "Ready" && x.status === "True");
  const first = await until("the pool's node", async () => (await claims(pool)).find(ready));
  await mark(nodeOf(first) ?? "", "KWOKUnhealthy");
  const second = await until("repair to replace the unhealthy node", async () => {
    const [only, ...more] = await claims(pool);
    return only && more.length === 0 && only.metadata.name !== first.metadata.name && ready(only)
      ? only
      : undefined;
  });
  await mark(nodeOf(second) ?? "", "KWOKRebootRequired");
  const rebooted = await until("the reboot to end and its DisruptionReason to clear", async () => {
    const c = (await claims(pool)).find((x) => x.metadata.name === second.metadata.name);
    const done = c && conds(c).some((x) => x.type === "Rebooting" && x.reason === "RebootSucceeded");
    return done && !conds(c).some((x) => x.type === "DisruptionReason") ? c : undefined;
  });
  const events = (
    await getJson<{ items: (Obj & { involvedObject: { name?: string }; firstTimestamp?: string })[] }>([
      "get",
      "events",
      "-A",
    ])
  ).items
    .filter(
      (e) =>
        (e.involvedObject.name ?? "").includes(pool) &&
        JSON.stringify(e["source"] ?? {}).includes("karpenter"),
    )
    .map(clean)
    .sort((a, b) => stamp(a).localeCompare(stamp(b)) || a.metadata.name.localeCompare(b.metadata.name));
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, "repair-rig-events.json"), JSON.stringify(events, null, 2) + "\n");
  writeFileSync(
    join(out, "repair-rig-nodeclaim-rebooted.json"),
    JSON.stringify(clean(rebooted), null, 2) + "\n",
  );
  console.log(`recorded ${String(events.length)} Events and the rebooted NodeClaim into ${out}`);
}

async function main(): Promise<void> {
  const version = readState()?.pair?.karpenter;
  if (!version) throw new Error("no running rig with a known pair: `npm run cluster:up` first");
  const pool = `wave-rec-repair-${randomBytes(3).toString("hex")}`;
  try {
    await record(pool, join(repoRoot, "src", "karpenter", "events", "fixtures", version));
  } finally {
    await kubectl(["delete", "nodepool", pool, "--ignore-not-found", "--wait=false"]);
  }
}

await main();
