// bench:pipeline — Wave's agent + core memory on the rig at N KWOK nodes (default 1,000), as a
// ratio of the Karpenter controller's RSS at the same moment (issue 4: goal ≤ 0.5).
//
// Karpenter provisions N single-pod nodes in a NodePool of the benchmark's own (one small instance
// type, disruption budget 0 so nothing churns); then `wave core` and `wave agent` run as the Helm
// chart runs them (two processes, TLS gRPC, bearer token, leader Lease) against the rig. After the
// agent's initial sync, RSS of the three processes is sampled over a settle window.
// Everything the benchmark created is deleted at the end, also on failure or Ctrl-C.
//
// The objects are what costs memory, so the benchmark waits for N registered Nodes and N bound
// pods, not for Ready/Running: on a 2-core machine the KWOK controller cannot keep 1,000 fake
// kubelets' heartbeats current, and nodes flap between Ready and Unknown.
//
//   npm run bench:pipeline                       (needs the rig: npm run cluster:up)
//   WAVE_BENCH_NODES=200 WAVE_BENCH_SETTLE_MS=20000 npm run bench:pipeline
//   WAVE_BENCH_NAMESPACE=bench-pipeline-xxxxxx   adopt (and delete at the end) the namespace and
//                                                NodePool of an interrupted run
//   WAVE_BENCH_NODES=0                           provision nothing: measure the cluster as it is
//   WAVE_BENCH_WAVE=/path/to/bin/wave.ts         run another checkout's Wave (A/B on the same rig)
//   WAVE_BENCH_KEEP=1                            keep the nodes for another run (then adopt them)
//   WAVE_BENCH_NODE_OPTIONS="--flag …"           NODE_OPTIONS for Wave's processes (A/B of V8 flags)
import { spawn, type ChildProcess } from "node:child_process";
import { newToken } from "../../src/api/auth.ts";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { freePorts, repoRoot, runningPid } from "../../hack/rig/lib.ts";
import { CLIENT_EXT, SERVER_EXT, makePki } from "../../test/support/pki.ts";
import {
  apply,
  createNamespace,
  deleteNamespace,
  get,
  kubeconfigPath,
  list,
  remove,
  requireRig,
  sleep,
} from "../../test/e2e/harness.ts";

/** 0: provision nothing, measure Wave against the cluster as it is (quick iteration). */
const NODES = positive("WAVE_BENCH_NODES", 1000, 0);
const SETTLE_MS = positive("WAVE_BENCH_SETTLE_MS", 60_000);
const PROVISION_TIMEOUT_MS = positive("WAVE_BENCH_PROVISION_TIMEOUT_MS", 30 * 60_000);
const SYNC_TIMEOUT_MS = 5 * 60_000;
const CLEANUP_TIMEOUT_MS = 15 * 60_000;
const INSTANCE_TYPE = "c-1x-amd64-linux";
const POOL_LABEL = "wave.dev/bench-pool";
const GOAL_RATIO = 0.5;
const MiB = 2 ** 20;
/** Leave the provisioned nodes for the next run (adopt them with WAVE_BENCH_NAMESPACE). */
const KEEP = process.env["WAVE_BENCH_KEEP"] === "1";
/** Node options for Wave's two processes only (e.g. V8 heap flags, to compare). */
const NODE_OPTIONS = process.env["WAVE_BENCH_NODE_OPTIONS"];
const WAVE_BIN = process.env["WAVE_BENCH_WAVE"] ?? join(repoRoot, "bin", "wave.ts");

function positive(name: string, fallback: number, min = 1): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min) {
    console.error(`${name} must be an integer ≥ ${min}, got ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return n;
}

const mib = (bytes: number): string => `${(bytes / MiB).toFixed(0)} MiB`;
const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const log = (msg: string): void => console.log(`[${new Date().toISOString().slice(11, 19)}] ${msg}`);

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat. */
function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may contain spaces): utime is the 12th, stime the 13th.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}

/** Resident and peak resident memory of a process, from /proc (bytes). */
function memory(pid: number): { rss: number; hwm: number } | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return undefined;
  }
  const kb = (field: string): number =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
  return { rss: kb("VmRSS") * 1024, hwm: kb("VmHWM") * 1024 };
}

// ---------------------------------------------------------------- rig objects

async function applyPool(pool: string): Promise<void> {
  const def = await get("nodepools.karpenter.sh", "default");
  if (!def) throw new Error("the rig's NodePool default is missing (npm run cluster:up re-applies it)");
  const tmpl = (def.spec?.["template"] ?? {}) as { spec?: { requirements?: unknown[] } };
  await apply({
    apiVersion: "karpenter.sh/v1",
    kind: "NodePool",
    metadata: { name: pool },
    spec: {
      ...def.spec,
      // Nothing is consolidated while the benchmark measures; deleting the pool still removes all.
      disruption: { consolidationPolicy: "WhenEmpty", consolidateAfter: "Never", budgets: [{ nodes: "0" }] },
      limits: { cpu: String(NODES * 2), memory: `${NODES * 4}Gi` },
      template: {
        metadata: { labels: { [POOL_LABEL]: pool } },
        spec: {
          ...tmpl.spec,
          requirements: [
            ...(tmpl.spec?.requirements ?? []),
            { key: "node.kubernetes.io/instance-type", operator: "In", values: [INSTANCE_TYPE] },
          ],
          taints: [{ key: POOL_LABEL, value: pool, effect: "NoSchedule" }],
        },
      },
    },
  });
}

/** One pod per node: a 1-vCPU node has room for one 600m pod. */
function deployment(ns: string, pool: string): object {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "fill", namespace: ns },
    spec: {
      replicas: NODES,
      selector: { matchLabels: { app: "fill" } },
      template: {
        metadata: { labels: { app: "fill" } },
        spec: {
          nodeSelector: { [POOL_LABEL]: pool },
          tolerations: [{ key: POOL_LABEL, operator: "Equal", value: pool, effect: "NoSchedule" }],
          terminationGracePeriodSeconds: 0,
          containers: [
            { name: "app", image: "pause:3.10", resources: { requests: { cpu: "600m", memory: "256Mi" } } },
          ],
        },
      },
    },
  };
}

const signalled = { interrupted: false };
/** A function, so checks after an await are not narrowed away. */
const interrupted = (): boolean => signalled.interrupted;
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    if (signalled.interrupted) process.exit(130);
    signalled.interrupted = true;
    log(`${sig}: stopping and cleaning up (again to quit at once)`);
  });
}

async function waitUntil(
  what: string,
  timeoutMs: number,
  check: () => Promise<string | true>,
): Promise<void> {
  const t0 = Date.now();
  let lastReport = 0;
  for (;;) {
    if (interrupted()) throw new Error(`interrupted while waiting for ${what}`);
    const r = await check().catch((e: unknown) => `error: ${e instanceof Error ? e.message : String(e)}`);
    if (r === true) return;
    if (Date.now() - t0 > timeoutMs)
      throw new Error(`timed out after ${secs(timeoutMs)} waiting for ${what} (${r})`);
    if (Date.now() - lastReport > 30_000) {
      log(`waiting for ${what}: ${r}`);
      lastReport = Date.now();
    }
    await sleep(2_000);
  }
}

// ---------------------------------------------------------------- Wave's processes

interface Proc {
  name: string;
  child: ChildProcess;
  pid: number;
  stderr: string[];
}

function startWave(name: "core" | "agent", env: Record<string, string>): Proc {
  const child = spawn(process.execPath, [WAVE_BIN, name], {
    env: { ...process.env, ...env, ...(NODE_OPTIONS === undefined ? {} : { NODE_OPTIONS }) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  if (child.pid === undefined) throw new Error(`wave ${name} did not start`);
  const p: Proc = { name, child, pid: child.pid, stderr: [] };
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    p.stderr.push(d);
    if (p.stderr.length > 50) p.stderr.shift();
  });
  child.on("exit", (code, signal) => {
    if (!stopping) log(`wave ${name} exited (${code ?? signal}): ${p.stderr.join("").slice(-2000)}`);
  });
  return p;
}

let stopping = false;

async function stopWave(p: Proc): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise<void>((r) => p.child.once("exit", () => r()));
  p.child.kill("SIGTERM");
  const t = setTimeout(() => p.child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(t);
}

/** The agent's Prometheus gauges, by name. */
async function agentMetrics(port: number): Promise<Map<string, number>> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  const out = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    const m = /^(wave_agent_[a-z_]+) ([0-9.e+-]+)$/.exec(line);
    if (m?.[1] && m[2]) out.set(m[1], Number(m[2]));
  }
  return out;
}

// ---------------------------------------------------------------- the benchmark

await requireRig();
const karpenterPid = runningPid("karpenter");
if (karpenterPid === undefined) throw new Error("Karpenter is not running on the rig");
if (!existsSync(WAVE_BIN)) {
  console.error(`WAVE_BENCH_WAVE: ${WAVE_BIN} does not exist`);
  process.exit(2);
}
const adopt = process.env["WAVE_BENCH_NAMESPACE"];
if (adopt !== undefined && !/^bench-pipeline-[0-9a-f]{6}$/.test(adopt)) {
  console.error(`WAVE_BENCH_NAMESPACE must name a namespace of an earlier run (bench-pipeline-xxxxxx)`);
  process.exit(2);
}
if (adopt !== undefined && !(await get("namespace", adopt))) {
  console.error(`WAVE_BENCH_NAMESPACE: namespace ${adopt} does not exist`);
  process.exit(2);
}
const ns = adopt ?? (await createNamespace("bench-pipeline"));
const pool = ns;
const dir = mkdtempSync(join(tmpdir(), "wave-bench-pipeline-"));
const procs: Proc[] = [];
/** Karpenter provisions NODES single-pod nodes in the benchmark's NodePool. */
async function provision(): Promise<void> {
  log(
    `rig: Karpenter pid ${karpenterPid ?? "?"}; provisioning ${NODES} KWOK nodes (${INSTANCE_TYPE}) in NodePool ${pool}`,
  );
  await applyPool(pool);
  const tProvision = Date.now();
  await apply(deployment(ns, pool));
  await waitUntil(`${NODES} registered nodes in ${pool}`, PROVISION_TIMEOUT_MS, async () => {
    const claims = await list("nodeclaims.karpenter.sh", { selector: `karpenter.sh/nodepool=${pool}` });
    const r = claims.filter(
      (c) => c.status?.conditions?.some((x) => x.type === "Registered" && x.status === "True") ?? false,
    ).length;
    return r >= NODES ? true : `${r} of ${claims.length} NodeClaims registered`;
  });
  await waitUntil(`${NODES} bound pods`, PROVISION_TIMEOUT_MS, async () => {
    const pods = await list("pods", { namespace: ns, selector: "app=fill" });
    const r = pods.filter((p) => typeof p.spec?.["nodeName"] === "string").length;
    return r >= NODES ? true : `${r} of ${pods.length} pods bound`;
  });
  log(`provisioned ${NODES} nodes with one bound pod each in ${secs(Date.now() - tProvision)}`);
}

let failed = false;
try {
  if (NODES === 0) log(`rig: Karpenter pid ${karpenterPid}; measuring the cluster as it is`);
  else await provision();
  const [nodes, pods, claims] = await Promise.all([
    list("nodes"),
    list("pods"),
    list("nodeclaims.karpenter.sh"),
  ]);
  log(`cluster: ${nodes.length} nodes, ${pods.length} pods, ${claims.length} NodeClaims`);

  // Wave as the chart runs it: cert-manager's Certificates, core's with the CA that agents'
  // client certificates must chain to, the agent's a client certificate with the same CA.
  makePki(dir, [
    { dir: "core-tls", cn: "wave-core", ext: SERVER_EXT },
    { dir: "agent-tls", cn: "wave-agent", ext: CLIENT_EXT },
  ]);
  const coreTls = join(dir, "core-tls");
  const agentTls = join(dir, "agent-tls");
  const [grpcPort, apiPort, metricsPort] = await freePorts(3);
  if (grpcPort === undefined || apiPort === undefined || metricsPort === undefined)
    throw new Error("no free ports");
  const common = {
    KUBECONFIG: kubeconfigPath,
    WAVE_NAMESPACE: ns,
    WAVE_CLUSTER_ID: "bench",
    WAVE_HOST: "127.0.0.1",
    WAVE_LOG_LEVEL: "warn",
    WAVE_AGENT_TOKEN: newToken(),
  };
  const tStart = Date.now();
  procs.push(
    startWave("core", {
      ...common,
      WAVE_GRPC_PORT: String(grpcPort),
      WAVE_PORT: String(apiPort),
      WAVE_GRPC_TLS_DIR: coreTls,
      WAVE_DATA_DIR: join(dir, "data"),
      WAVE_ADMIN_TOKEN: newToken(),
      WAVE_VIEWER_TOKEN: newToken(),
      WAVE_POD_NAME: "bench-core",
    }),
  );
  procs.push(
    startWave("agent", {
      ...common,
      WAVE_CORE_ADDRESS: `https://localhost:${grpcPort}`,
      WAVE_AGENT_TLS_DIR: agentTls,
      WAVE_METRICS_PORT: String(metricsPort),
      WAVE_POD_NAME: "bench-agent",
    }),
  );
  const minObjects = nodes.length + pods.length + claims.length;
  let objects = 0;
  await waitUntil("the agent's initial sync to be acknowledged by core", SYNC_TIMEOUT_MS, async () => {
    for (const p of procs) if (p.child.exitCode !== null) throw new Error(`wave ${p.name} exited`);
    const m = await agentMetrics(metricsPort);
    objects = m.get("wave_agent_objects") ?? 0;
    const synced =
      m.get("wave_agent_connected") === 1 &&
      m.get("wave_agent_buffered_messages") === 0 &&
      (m.get("wave_agent_last_ack_sequence") ?? 0) > 0 &&
      objects >= minObjects;
    return synced
      ? true
      : `connected ${m.get("wave_agent_connected") ?? "?"}, ${objects} objects, buffered ${m.get("wave_agent_buffered_messages") ?? "?"}`;
  });
  log(
    `agent synced ${objects} objects to core in ${secs(Date.now() - tStart)} (processes started → snapshot acknowledged)`,
  );

  if (interrupted()) throw new Error("interrupted");
  const [core, agent] = procs;
  if (!core || !agent) throw new Error("unreachable");
  const samples: { core: number; agent: number; karpenter: number }[] = [];
  const tSettle = Date.now();
  const cpu0 = {
    core: cpuSeconds(core.pid),
    agent: cpuSeconds(agent.pid),
    karpenter: cpuSeconds(karpenterPid),
  };
  while (Date.now() - tSettle < SETTLE_MS && !interrupted()) {
    const c = memory(core.pid);
    const a = memory(agent.pid);
    const k = memory(karpenterPid);
    if (!c || !a || !k) throw new Error("a measured process is gone");
    samples.push({ core: c.rss, agent: a.rss, karpenter: k.rss });
    await sleep(2_000);
  }
  const mean = (f: (s: (typeof samples)[number]) => number): number =>
    samples.reduce((n, s) => n + f(s), 0) / samples.length;
  const peak = { core: memory(core.pid)?.hwm ?? 0, agent: memory(agent.pid)?.hwm ?? 0 };
  const settleS = (Date.now() - tSettle) / 1000;
  const cpuPct = (pid: number, from: number): string =>
    `${(((cpuSeconds(pid) - from) / settleS) * 100).toFixed(1)} % CPU`;
  const cpu = {
    core: cpuPct(core.pid, cpu0.core),
    agent: cpuPct(agent.pid, cpu0.agent),
    karpenter: cpuPct(karpenterPid, cpu0.karpenter),
  };
  const wave = mean((s) => s.core + s.agent);
  const karpenter = mean((s) => s.karpenter);
  const ratio = wave / karpenter;
  const peakRatio = (peak.core + peak.agent) / Math.max(...samples.map((s) => s.karpenter));
  console.log("");
  console.log(
    `bench:pipeline at ${nodes.length} nodes, ${pods.length} pods, ${claims.length} NodeClaims (${samples.length} samples over ${secs(SETTLE_MS)}):`,
  );
  console.log(`  wave core   RSS ${mib(mean((s) => s.core))} (peak ${mib(peak.core)}), ${cpu.core}`);
  console.log(`  wave agent  RSS ${mib(mean((s) => s.agent))} (peak ${mib(peak.agent)}), ${cpu.agent}`);
  console.log(`  karpenter   RSS ${mib(karpenter)}, ${cpu.karpenter}`);
  console.log(
    `  load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(", ")} (1, 5, 15 min)`,
  );
  console.log(
    `  ratio (agent + core) / karpenter: ${ratio.toFixed(2)} (peaks: ${peakRatio.toFixed(2)}); goal ≤ ${GOAL_RATIO}: ${ratio <= GOAL_RATIO ? "met" : "MISSED"}`,
  );
} catch (err) {
  failed = true;
  console.error(err instanceof Error ? err.message : String(err));
} finally {
  stopping = true;
  for (const p of procs.reverse()) await stopWave(p);
  if (KEEP && !interrupted()) {
    log(
      `kept namespace and NodePool ${ns}: WAVE_BENCH_NAMESPACE=${ns} measures them again (and deletes them)`,
    );
  } else {
    log("cleaning up: deleting the namespace and the NodePool (Karpenter removes its nodes)");
    await deleteNamespace(ns).catch(() => undefined);
    await remove("nodepools.karpenter.sh", pool).catch(() => undefined);
    const tClean = Date.now();
    await waitUntil(`the NodeClaims of ${pool} to be gone`, CLEANUP_TIMEOUT_MS, async () => {
      const left = (await list("nodeclaims.karpenter.sh", { selector: `karpenter.sh/nodepool=${pool}` }))
        .length;
      return left === 0 ? true : `${left} left`;
    }).catch((e: unknown) => {
      failed = true;
      console.error(e instanceof Error ? e.message : String(e));
    });
    log(`cleaned up in ${secs(Date.now() - tClean)}`);
  }
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
