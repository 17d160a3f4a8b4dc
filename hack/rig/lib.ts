// Shared helpers for the local Kubernetes + Karpenter rig (hack/rig/cluster.ts) and the e2e
// harness (test/e2e/harness.ts). Node built-ins only.
import { execFile, spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const rigSrcDir = join(repoRoot, "hack", "rig");
export const rigDir = join(repoRoot, ".rig");
export const binDir = join(rigDir, "bin");
/** Built binaries side by side per version: .rig/cache/<piece>@<version>/<binary> (+ .stamp). */
export const cacheDir = join(rigDir, "cache");
export const logsDir = join(rigDir, "logs");
export const runDir = join(rigDir, "run");
export const pkiDir = join(rigDir, "pki");
export const dataDir = join(rigDir, "data");
export const kubeconfigPath = join(rigDir, "kubeconfig");
export const statePath = join(runDir, "state.json");
export const kubectlPath = join(binDir, "kubectl");

/** Components in start order; `down` stops them in reverse. */
export const componentNames = [
  "etcd",
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
  "kwok-controller",
  "karpenter",
] as const;
export type ComponentName = (typeof componentNames)[number];

/** Which binary in .rig/bin each component runs. */
export const componentBinary: Record<ComponentName, string> = {
  etcd: "etcd",
  "kube-apiserver": "kube-apiserver",
  "kube-controller-manager": "kube-controller-manager",
  "kube-scheduler": "kube-scheduler",
  "kwok-controller": "kwok",
  karpenter: "karpenter-kwok",
};

export interface RigState {
  startedAt: string;
  /** The version pair the rig runs (absent in state files from before pairs existed). */
  pair?: RigPair;
  ports: Record<string, number>;
  kubeconfig: string;
  apiserver: string;
  /** The FEATURE_GATES Karpenter was started with ("" = the release's defaults). */
  gates?: string;
}

/** One supported version pair: a Karpenter release and the Kubernetes, etcd and KWOK it runs on. */
export interface RigPair {
  karpenter: string;
  kubernetes: string;
  etcd: string;
  kwok: string;
  /** Karpenter feature gates the rig turns on for this release (`GATES_<karpenter>=`), if any. */
  gates?: string;
}

export interface RigVersions {
  defaultKarpenter: string;
  pairs: RigPair[];
}

/**
 * Parse hack/rig/versions.env (`DEFAULT_KARPENTER=` + `PAIR_<karpenter>=<kube> <etcd> <kwok>`, and
 * optionally `GATES_<karpenter>=<Gate>=true,…` for a pair listed before it).
 */
export function parseVersions(text: string): RigVersions {
  let defaultKarpenter = "";
  const pairs: RigPair[] = [];
  const gates = new Map<string, string>();
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    const key = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    if (eq <= 0) throw new Error(`versions.env line ${i + 1}: expected KEY=VALUE, got "${line}"`);
    if (key === "DEFAULT_KARPENTER") defaultKarpenter = value;
    else if (key.startsWith("PAIR_")) {
      const [kubernetes, etcd, kwok, ...rest] = value.split(/\s+/);
      if (kubernetes === undefined || etcd === undefined || kwok === undefined || rest.length > 0) {
        throw new Error(`versions.env line ${i + 1}: ${key} needs "<kubernetes> <etcd> <kwok>"`);
      }
      pairs.push({ karpenter: key.slice("PAIR_".length), kubernetes, etcd, kwok });
    } else if (key.startsWith("GATES_")) {
      if (!/^[A-Za-z]+=(true|false)(,[A-Za-z]+=(true|false))*$/.test(value))
        throw new Error(`versions.env line ${i + 1}: ${key} needs "<Gate>=true|false,…"`);
      gates.set(key.slice("GATES_".length), value);
    } else throw new Error(`versions.env line ${i + 1}: unknown key ${key}`);
  }
  if (!pairs.some((p) => p.karpenter === defaultKarpenter)) {
    throw new Error(`versions.env: DEFAULT_KARPENTER=${defaultKarpenter} has no PAIR_ line`);
  }
  for (const [karpenter, value] of gates) {
    const pair = pairs.find((p) => p.karpenter === karpenter);
    if (!pair) throw new Error(`versions.env: GATES_${karpenter} has no PAIR_ line`);
    pair.gates = value;
  }
  return { defaultKarpenter, pairs };
}

export function readVersions(): RigVersions {
  return parseVersions(readFileSync(join(rigSrcDir, "versions.env"), "utf8"));
}

/**
 * The pair for a requested Karpenter version: exact (`v1.8.2`), by minor (`v1.8`, `1.8`), or the
 * default when nothing is asked. Anything else is an error that names the supported pairs.
 */
export function selectPair(versions: RigVersions, requested?: string): RigPair {
  const want = (requested ?? "").trim();
  const norm = want === "" ? versions.defaultKarpenter : want.startsWith("v") ? want : `v${want}`;
  const exact = versions.pairs.find((p) => p.karpenter === norm);
  if (exact) return exact;
  const byMinor = versions.pairs.filter((p) => p.karpenter.startsWith(`${norm}.`));
  if (byMinor.length === 1 && byMinor[0]) return byMinor[0];
  const known = versions.pairs.map((p) => `${p.karpenter} (Kubernetes ${p.kubernetes})`).join(", ");
  throw new Error(
    `Karpenter ${want} is not a supported rig pair; supported: ${known} (add a PAIR_ line to hack/rig/versions.env)`,
  );
}

/** The requested Karpenter from `--karpenter vX` / `--karpenter=vX` in argv, else WAVE_RIG_KARPENTER. */
export function requestedKarpenter(argv: string[], env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const [i, a] of argv.entries()) {
    if (a === "--karpenter") return argv[i + 1];
    if (a.startsWith("--karpenter=")) return a.slice("--karpenter=".length);
  }
  const v = env["WAVE_RIG_KARPENTER"];
  return v === undefined || v === "" ? undefined : v;
}

/**
 * The FEATURE_GATES to start Karpenter with: `--gates <list|off>` in argv, else
 * WAVE_RIG_FEATURE_GATES, else the pair's `GATES_` line. "off" (or none) = the release's defaults.
 */
export function requestedGates(pair: RigPair, argv: string[], env: NodeJS.ProcessEnv = process.env): string {
  let asked: string | undefined;
  for (const [i, a] of argv.entries()) {
    if (a === "--gates") asked = argv[i + 1];
    else if (a.startsWith("--gates=")) asked = a.slice("--gates=".length);
  }
  asked ??= env["WAVE_RIG_FEATURE_GATES"] || undefined;
  if (asked === undefined) return pair.gates ?? "";
  return asked === "off" ? "" : asked;
}

export function readState(): RigState | undefined {
  if (!existsSync(statePath)) return undefined;
  try {
    return JSON.parse(readFileSync(statePath, "utf8")) as RigState;
  } catch {
    return undefined;
  }
}

export function pidFile(name: ComponentName): string {
  return join(runDir, `${name}.pid`);
}

export function logFile(name: string): string {
  return join(logsDir, `${name}.log`);
}

export function readPid(name: ComponentName): number | undefined {
  const f = pidFile(name);
  if (!existsSync(f)) return undefined;
  const pid = Number.parseInt(readFileSync(f, "utf8").trim(), 10);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** True if `pid` is alive and really runs .rig/bin/<binary> (guards against pid reuse). */
export function pidRunsBinary(pid: number, binary: string): boolean {
  let exe: string;
  try {
    exe = readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return false;
  }
  exe = exe.replace(/ \(deleted\)$/, "");
  const want = join(binDir, binary);
  // .rig may be a symlink (a git worktree sharing one rig): the kernel reports the resolved path.
  let real = want;
  try {
    real = realpathSync(want);
  } catch {
    // not built yet: compare the path as given
  }
  if (exe === want || exe === real) return true;
  // Fall back to argv[0] (e.g. when /proc/<pid>/exe is unreadable or the path went through a symlink).
  try {
    const argv0 = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] ?? "";
    return resolve(argv0) === want || resolve(argv0) === real;
  } catch {
    return false;
  }
}

/** The pid of a running component started by the rig, or undefined. */
export function runningPid(name: ComponentName): number | undefined {
  const pid = readPid(name);
  if (pid === undefined) return undefined;
  return pidRunsBinary(pid, componentBinary[name]) ? pid : undefined;
}

export function tailFile(path: string, lines = 30): string {
  if (!existsSync(path)) return `(no file ${path})`;
  const text = readFileSync(path, "utf8");
  return text
    .split("\n")
    .slice(-lines - 1)
    .join("\n");
}

/** Tail of every .rig/logs/*.log, for failure reports. */
export function dumpRigLogs(lines = 40): string {
  if (!existsSync(logsDir)) return "(no .rig/logs)";
  const parts: string[] = [];
  for (const f of readdirSync(logsDir).sort()) {
    if (!f.endsWith(".log")) continue;
    const p = join(logsDir, f);
    if (!statSync(p).isFile()) continue;
    parts.push(`===== ${p} (last ${lines} lines) =====\n${tailFile(p, lines)}`);
  }
  return parts.join("\n");
}

/** Reserve `n` distinct free TCP ports (checked on all interfaces, so 127.0.0.1 and 0.0.0.0 binds work). */
export async function freePorts(n: number): Promise<number[]> {
  const servers: Server[] = [];
  const ports: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const srv = createServer();
      servers.push(srv);
      await new Promise<void>((ok, fail) => {
        srv.once("error", fail);
        srv.listen({ port: 0, host: "0.0.0.0", exclusive: true }, () => ok());
      });
      const addr = srv.address();
      if (addr === null || typeof addr === "string") throw new Error("unexpected server address");
      ports.push(addr.port);
    }
  } finally {
    await Promise.all(servers.map((s) => new Promise((ok) => s.close(ok))));
  }
  return ports;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((ok) => setTimeout(ok, ms));
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run the rig's kubectl against the rig's kubeconfig (async; never throws on a non-zero exit). */
export function kubectlRaw(args: string[], input?: string, timeoutMs = 60_000): Promise<KubectlResult> {
  return new Promise((ok) => {
    const child = execFile(
      kubectlPath,
      args,
      {
        env: { ...process.env, KUBECONFIG: kubeconfigPath },
        maxBuffer: 64 * 1024 * 1024,
        timeout: timeoutMs,
      },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === "number" ? err.code : 1;
        ok({ code, stdout, stderr: stderr || (err?.message ?? "") });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** Run the rig's kubectl; throws with stderr on failure and returns stdout. */
export async function kubectl(args: string[], input?: string, timeoutMs = 60_000): Promise<string> {
  const r = await kubectlRaw(args, input, timeoutMs);
  if (r.code !== 0) {
    throw new Error(`kubectl ${args.join(" ")} failed (exit ${r.code}): ${r.stderr.trim()}`);
  }
  return r.stdout;
}

/** Synchronous variant for scripts (status). */
export function kubectlSync(args: string[], timeoutMs = 15_000): KubectlResult {
  const r = spawnSync(kubectlPath, args, {
    env: { ...process.env, KUBECONFIG: kubeconfigPath },
    encoding: "utf8",
    timeout: timeoutMs,
  });
  return { code: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

/** Is the rig's apiserver answering /readyz with the admin credentials? */
export async function apiserverReady(timeoutMs = 5_000): Promise<boolean> {
  if (!existsSync(kubectlPath) || !existsSync(kubeconfigPath)) return false;
  const r = await kubectlRaw(
    ["get", "--raw", "/readyz", `--request-timeout=${timeoutMs}ms`],
    undefined,
    timeoutMs + 2_000,
  );
  return r.code === 0 && r.stdout.trim() === "ok";
}

/** True when every component runs (by pid file) and the apiserver is ready. */
export async function rigHealthy(): Promise<boolean> {
  for (const name of componentNames) {
    if (runningPid(name) === undefined) return false;
  }
  return apiserverReady();
}
