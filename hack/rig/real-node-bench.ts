// First pod start on the rig's real node, cold (the image is not on the node: pulled from the rig's
// registry) against warm (already pulled), per image size. Needs the real node
// (`npm run cluster:up -- --real-node`) and podman (builds the images).
//
//   node hack/rig/real-node-bench.ts [--runs N]
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cacheDir, kubectl, kubectlRaw, sleep } from "./lib.ts";
import { REAL_NODE_TAINT, paths } from "./real-node.ts";
import { readRealNode } from "./real-node-run.ts";

/** The images: the pause program plus `layers` layers of 100 MB of random (incompressible) bytes. */
export const BENCH_IMAGES = [
  { name: "bench-small", layers: 0 },
  { name: "bench-100mb", layers: 1 },
  { name: "bench-500mb", layers: 5 },
] as const;
const LAYER_BYTES = 100 * 1024 * 1024;
const NS = "wave-real-bench";

export interface BenchRow {
  image: string;
  bytes: number;
  cold: number[];
  warm: number[];
  pull: number[];
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};

/** The bench's table: medians in seconds and warm / cold. */
export function benchTable(rows: BenchRow[]): string {
  const head = "| image | size | cold start (s) | warm start (s) | warm / cold | pull (kubelet, s) |";
  const lines = rows.map((r) => {
    const cold = median(r.cold);
    const warm = median(r.warm);
    const mb = (r.bytes / 1024 / 1024).toFixed(0);
    const ratio = cold > 0 ? (warm / cold).toFixed(2) : "-";
    const pull = r.pull.length > 0 ? median(r.pull).toFixed(2) : "-";
    return `| ${r.image} | ${mb} MB | ${cold.toFixed(2)} | ${warm.toFixed(2)} | ${ratio} | ${pull} |`;
  });
  return [head, "| --- | --- | --- | --- | --- | --- |", ...lines].join("\n");
}

/** "Successfully pulled image "x" in 6.481s (…)" or "in 352ms" → seconds. */
export function pulledSeconds(message: string): number | undefined {
  const m = / in (\d+(?:\.\d+)?)(ms|s) /.exec(message);
  if (m === null) return undefined;
  return Number(m[1]) / (m[2] === "ms" ? 1000 : 1);
}

function sh(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** Build (once, kept by podman) and push each image; returns name → pushed reference and size. */
function pushImages(registry: { push: string; pull: string }): Map<string, { ref: string; bytes: number }> {
  const dir = join(cacheDir, "bench-images");
  const refs = new Map<string, { ref: string; bytes: number }>();
  for (const img of BENCH_IMAGES) {
    const local = `localhost/wave-${img.name}:1`;
    if (spawnSync("podman", ["image", "exists", local]).status !== 0) {
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
      sh("cp", [join(cacheDir, "pause", "pause"), join(dir, "pause")]);
      const lines = ["FROM scratch", "COPY pause /pause"];
      for (let i = 0; i < img.layers; i++) {
        writeFileSync(join(dir, `layer${i}`), randomBytes(LAYER_BYTES));
        lines.push(`COPY layer${i} /data/layer${i}`);
      }
      writeFileSync(join(dir, "Containerfile"), [...lines, 'ENTRYPOINT ["/pause"]', ""].join("\n"));
      sh("podman", ["build", "-q", "-t", local, dir]);
      rmSync(dir, { recursive: true, force: true });
    }
    const path = `wave-bench/${img.name}:1`;
    sh("podman", ["push", "-q", "--tls-verify=false", local, `${registry.push}/${path}`]);
    const ref = `${registry.pull}/${path}`;
    const bytes = Number(sh("podman", ["image", "inspect", "-f", "{{.Size}}", local]).trim());
    refs.set(img.name, { ref, bytes });
  }
  return refs;
}

function podSpec(name: string, image: string): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: NS },
    spec: {
      nodeSelector: { [REAL_NODE_TAINT.key]: REAL_NODE_TAINT.value },
      tolerations: [{ key: REAL_NODE_TAINT.key, operator: "Exists", effect: "NoSchedule" }],
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "c", image, imagePullPolicy: "IfNotPresent" }],
    },
  });
}

/** Seconds from create to the container Ready, and the kubelet's pull time if it pulled. */
async function startOnce(name: string, image: string): Promise<{ secs: number; pull?: number }> {
  const t0 = Date.now();
  await kubectl(["apply", "-f", "-"], podSpec(name, image));
  const jp = "{.status.containerStatuses[0].ready}";
  while ((await kubectlRaw(["-n", NS, "get", "pod", name, "-o", `jsonpath=${jp}`])).stdout !== "true") {
    if (Date.now() - t0 > 300_000) throw new Error(`pod ${name} not ready in 300 s`);
    await sleep(100);
  }
  const secs = (Date.now() - t0) / 1000;
  const sel = `involvedObject.name=${name},reason=Pulled`;
  const msgs = await kubectl([
    "-n",
    NS,
    "get",
    "events",
    "--field-selector",
    sel,
    "-o",
    "jsonpath={.items[*].message}",
  ]);
  await kubectl(["-n", NS, "delete", "pod", name, "--wait=true"]);
  const pull = pulledSeconds(msgs);
  return pull === undefined ? { secs } : { secs, pull };
}

/** `ctr … ls` output: rows of whitespace-separated columns, header dropped. */
const ctrRows = (ctr: string[], what: string): string[][] =>
  sh("ctr", [...ctr, what, "ls"])
    .split("\n")
    .slice(1)
    .filter((l) => l.trim() !== "")
    .map((l) => l.split(/\s+/));

/**
 * Remove the image from the node. The CRI keeps it under its tag, its repo digest and its config
 * id, all pointing at one manifest; and a stopped container of a deleted pod keeps the unpacked
 * layers (the next pull then skips them), so those containers go first.
 */
function removeImage(ctr: string[], ref: string): void {
  const running = new Set(ctrRows(ctr, "tasks").map((r) => r[0]));
  const stopped = ctrRows(ctr, "containers").filter((r) => r[1] === ref && !running.has(r[0]));
  // Best effort: one the kubelet removes meanwhile is gone already.
  for (const r of stopped) spawnSync("ctr", [...ctr, "containers", "rm", r[0] ?? ""]);
  const rows = ctrRows(ctr, "images");
  const digest = rows.find((r) => r[0] === ref)?.[2];
  if (digest === undefined) return;
  const names = rows.filter((r) => r[2] === digest).map((r) => r[0] ?? "");
  sh("ctr", [...ctr, "images", "rm", "--sync", ...names]);
}

async function main(): Promise<void> {
  const node = readRealNode();
  if (node?.layout.registry === undefined) throw new Error("no real node: npm run cluster:up -- --real-node");
  const runs = Number(process.argv[process.argv.indexOf("--runs") + 1] ?? "") || 1;
  const ctr = ["--address", paths(node.layout).socket, "-n", "k8s.io"];
  const refs = pushImages(node.layout.registry);
  await kubectl(["create", "namespace", NS]).catch(() => "");
  const rows: BenchRow[] = [];
  try {
    for (const img of BENCH_IMAGES) {
      const { ref, bytes } = refs.get(img.name) ?? { ref: "", bytes: 0 };
      const row: BenchRow = { image: img.name, bytes, cold: [], warm: [], pull: [] };
      for (let run = 0; run < runs; run++) {
        removeImage(ctr, ref);
        const cold = await startOnce(`${img.name}-cold-${run}`, ref);
        const warm = await startOnce(`${img.name}-warm-${run}`, ref);
        row.cold.push(cold.secs);
        row.warm.push(warm.secs);
        if (cold.pull !== undefined) row.pull.push(cold.pull);
      }
      rows.push(row);
    }
  } finally {
    await kubectl(["delete", "namespace", NS, "--wait=false"]).catch(() => "");
  }
  const bw = node.layout.registry.mbPerSec || "unlimited";
  process.stdout.write(
    `${benchTable(rows)}\n(median of ${runs} run(s) each; node ${node.layout.name}; registry at ${bw} MB/s)\n`,
  );
}

if (import.meta.main) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
