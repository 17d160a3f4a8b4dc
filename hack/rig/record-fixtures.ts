// Records the Karpenter objects Wave parses, as the running rig's Karpenter writes them, into
// test/fixtures/karpenter/recorded/<karpenter version>/ — one folder per rig pair, read by
// src/karpenter/recorded.test.ts. Run on a rig that is up (any pair):
//
//   npm run cluster:up -- --karpenter v1.8 && node hack/rig/record-fixtures.ts
//
// One NodePool of its own, a Deployment of 2 × 1 CPU pods → NodeClaim(s) launched, registered,
// initialized → scaled to 0 → consolidated (Empty). Every distinct version of the first NodeClaim
// is kept (its condition sets through the whole life), plus the NodePool, the Node, and the
// Events Karpenter wrote. managedFields are dropped; everything else is as the apiserver served it.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { kubeconfigPath, kubectl, kubectlPath, readState, repoRoot, sleep } from "./lib.ts";

type Obj = {
  metadata: { name: string; uid?: string; resourceVersion?: string; managedFields?: unknown };
  [k: string]: unknown;
};

/** Splits kubectl's stream of pretty-printed JSON objects (watch -o json) into objects. */
function jsonStream(onObject: (o: unknown) => void): (chunk: string) => void {
  let buf = "";
  let depth = 0;
  let inString = false;
  let escaped = false;
  return (chunk) => {
    for (const ch of chunk) {
      buf += ch;
      if (inString) {
        if (escaped) escaped = false;
        else if (ch === "\\") escaped = true;
        else if (ch === '"') inString = false;
      } else if (ch === '"') inString = true;
      else if (ch === "{") depth++;
      else if (ch === "}" && --depth === 0) {
        onObject(JSON.parse(buf.trim()));
        buf = "";
      }
    }
  };
}

const clean = (o: Obj): Obj => {
  const { managedFields: _drop, ...metadata } = o.metadata;
  return { ...o, metadata };
};

async function getJson<T>(args: string[]): Promise<T> {
  return JSON.parse(await kubectl([...args, "-o", "json"])) as T;
}

async function main(): Promise<void> {
  const state = readState();
  const version = state?.pair?.karpenter;
  if (!version)
    throw new Error("no running rig with a known pair: `npm run cluster:up -- --karpenter vX.Y` first");
  const out = join(repoRoot, "test", "fixtures", "karpenter", "recorded", version);
  const ns = "wave-record";
  const pool = "wave-record";
  const label = "wave.dev/record-pool";
  await kubectl(["delete", "namespace", ns, "--ignore-not-found", "--wait=true"], undefined, 120_000);
  await kubectl(["create", "namespace", ns]);
  for (let i = 0; i < 50; i++) {
    if ((await kubectl(["get", "serviceaccount", "default", "-n", ns, "--ignore-not-found"])).trim()) break;
    await sleep(200);
  }
  const def = await getJson<{
    spec: { template: { spec: Record<string, unknown> } } & Record<string, unknown>;
  }>(["get", "nodepool", "default"]);
  const poolObj = {
    apiVersion: "karpenter.sh/v1",
    kind: "NodePool",
    metadata: { name: pool },
    spec: {
      ...def.spec,
      template: {
        metadata: { labels: { [label]: pool } },
        spec: { ...def.spec.template.spec, taints: [{ key: label, value: pool, effect: "NoSchedule" }] },
      },
      disruption: {
        consolidationPolicy: "WhenEmptyOrUnderutilized",
        consolidateAfter: "5s",
        budgets: [{ nodes: "100%" }],
      },
    },
  };
  await kubectl(["apply", "-f", "-"], JSON.stringify(poolObj));
  const deploy = (replicas: number): object => ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "app", namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: "app" } },
      template: {
        metadata: { labels: { app: "app" } },
        spec: {
          nodeSelector: { [label]: pool },
          tolerations: [{ key: label, operator: "Equal", value: pool, effect: "NoSchedule" }],
          terminationGracePeriodSeconds: 0,
          containers: [
            { name: "app", image: "pause:3.10", resources: { requests: { cpu: "1", memory: "128Mi" } } },
          ],
        },
      },
    },
  });
  // Every NodeClaim version through a watch (polling misses the short Disrupting step).
  const claimVersions = new Map<string, Obj>();
  let first: string | undefined;
  const watch = spawn(
    kubectlPath,
    ["get", "nodeclaims", "-l", `karpenter.sh/nodepool=${pool}`, "--watch", "-o", "json"],
    { env: { ...process.env, KUBECONFIG: kubeconfigPath }, stdio: ["ignore", "pipe", "inherit"] },
  );
  watch.stdout.setEncoding("utf8");
  watch.stdout.on(
    "data",
    jsonStream((o) => {
      const c = o as Obj;
      first ??= c.metadata.name;
      if (c.metadata.name === first && c.metadata.resourceVersion)
        claimVersions.set(c.metadata.resourceVersion, clean(c));
    }),
  );
  await kubectl(["apply", "-f", "-"], JSON.stringify(deploy(2)));

  let node: Obj | undefined;
  let poolSeen: Obj | undefined;
  let scaledDown = false;
  const deadline = Date.now() + 240_000;
  for (;;) {
    if (Date.now() > deadline) throw new Error("timed out: the NodeClaim was not consolidated within 240 s");
    const claims = (
      await getJson<{ items: Obj[] }>(["get", "nodeclaims", "-l", `karpenter.sh/nodepool=${pool}`])
    ).items;
    const c = claims.find((x) => x.metadata.name === first);
    const conds =
      (c?.["status"] as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? [];
    const initialized = conds.some((x) => x.type === "Initialized" && x.status === "True");
    if (initialized && !scaledDown) {
      const nodeName = (c?.["status"] as { nodeName?: string }).nodeName ?? "";
      node = clean(await getJson<Obj>(["get", "node", nodeName]));
      poolSeen = clean(await getJson<Obj>(["get", "nodepool", pool]));
      await kubectl(["scale", "deployment", "app", "-n", ns, "--replicas=0"]);
      scaledDown = true;
    }
    if (first !== undefined && scaledDown && c === undefined) break;
    await sleep(500);
  }
  await sleep(1000);
  watch.kill();
  const events = (
    await getJson<{ items: (Obj & { source?: { component?: string }; reportingComponent?: string })[] }>([
      "get",
      "events",
      "-A",
    ])
  ).items
    .filter((e) => (e.reportingComponent ?? e.source?.component ?? "") === "karpenter")
    .filter((e) => {
      const io = e["involvedObject"] as { name?: string; namespace?: string };
      return io.namespace === ns || io.name === pool || io.name === first || io.name === node?.metadata.name;
    })
    .map(clean);
  mkdirSync(out, { recursive: true });
  const write = (name: string, v: unknown): void =>
    writeFileSync(join(out, name), JSON.stringify(v, null, 2) + "\n");
  write("nodeclaim-versions.json", [...claimVersions.values()]);
  write("node.json", node);
  write("nodepool.json", poolSeen);
  write("events.json", events);
  write("rig.json", { pair: state.pair, recordedAt: new Date().toISOString() });
  // In the repository's JSON style, so `npm test`'s prettier --check passes on fresh recordings.
  spawnSync(join(repoRoot, "node_modules", ".bin", "prettier"), ["--write", out], { stdio: "ignore" });
  process.stderr.write(
    `[record] ${out}: ${claimVersions.size} NodeClaim versions, ${events.length} Karpenter events\n`,
  );
  await kubectl(["delete", "namespace", ns, "--wait=false"]);
  await kubectl(["delete", "nodepool", pool, "--wait=false"]);
}

main().catch((e: unknown) => {
  process.stderr.write(`[record] FAILED: ${(e as Error).message}\n`);
  process.exit(1);
});
