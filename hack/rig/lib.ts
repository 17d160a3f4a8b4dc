// Shared helpers for the local Kubernetes + Karpenter rig (hack/rig/cluster.ts) and the e2e
// harness (test/e2e/harness.ts). Node built-ins only.
import { execFile, spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, readlinkSync, statSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const rigSrcDir = join(repoRoot, "hack", "rig");
export const rigDir = join(repoRoot, ".rig");
export const binDir = join(rigDir, "bin");
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
  ports: Record<string, number>;
  kubeconfig: string;
  apiserver: string;
}

export function readVersions(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of readFileSync(join(rigSrcDir, "versions.env"), "utf8").split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    if (eq > 0) out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
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
  if (exe === join(binDir, binary)) return true;
  // Fall back to argv[0] (e.g. when /proc/<pid>/exe is unreadable or the path went through a symlink).
  try {
    const argv0 = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] ?? "";
    return resolve(argv0) === join(binDir, binary);
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
