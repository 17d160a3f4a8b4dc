// The running `wave start` instance, found by the CLI: `wave start` writes
// <dataDir>/instance.json (mode 0600: it holds the tokens it generated) and removes it on the way
// out; `wave spot|warmup …` run with the same data directory read it for core's address and the
// admin token, so they reach the instance whatever port it bound. A file whose process is gone
// is ignored (a killed instance leaves it behind).
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface Instance {
  pid: number;
  /** core's API and web UI, e.g. http://127.0.0.1:8080 */
  apiUrl: string;
  grpcAddress: string;
  /** The webhook's HTTPS URL; absent on the simulator (it admits in process). */
  webhookUrl?: string;
  clusterId: string;
  /** Tokens `wave start` generated (absent when configured: the CLI then needs them set too). */
  adminToken?: string;
  viewerToken?: string;
}

/**
 * Creates the data directory (and missing parents) 0700: it holds the history, generated tokens
 * and the dev CA's key (docs/security.md). An existing directory is left as its owner set it.
 */
export function makeDataDir(dataDir: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
}

export const instanceFile = (dataDir: string): string => join(dataDir, "instance.json");

export function writeInstance(dataDir: string, instance: Instance): void {
  writeFileSync(instanceFile(dataDir), JSON.stringify(instance, null, 2) + "\n", { mode: 0o600 });
}

/** Removes the file if it is still this process's (a newer instance may have replaced it). */
export function removeInstance(dataDir: string, pid: number): void {
  if (readInstance(dataDir, () => true)?.pid === pid) rmSync(instanceFile(dataDir), { force: true });
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, owned by someone else.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** The instance recorded under dataDir, if its file is well-formed and its process alive. */
export function readInstance(
  dataDir: string,
  alive: (pid: number) => boolean = processAlive,
): Instance | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(instanceFile(dataDir), "utf8"));
  } catch {
    return undefined;
  }
  if (typeof raw !== "object" || raw === null) return undefined;
  const o = raw as Record<string, unknown>;
  const pid = o.pid;
  const apiUrl = str(o.apiUrl);
  const grpcAddress = str(o.grpcAddress);
  const clusterId = str(o.clusterId);
  if (typeof pid !== "number" || !Number.isInteger(pid) || pid <= 0) return undefined;
  if (apiUrl === undefined || grpcAddress === undefined || clusterId === undefined) return undefined;
  if (!alive(pid)) return undefined;
  const instance: Instance = { pid, apiUrl, grpcAddress, clusterId };
  const webhookUrl = str(o.webhookUrl);
  const adminToken = str(o.adminToken);
  const viewerToken = str(o.viewerToken);
  if (webhookUrl !== undefined) instance.webhookUrl = webhookUrl;
  if (adminToken !== undefined) instance.adminToken = adminToken;
  if (viewerToken !== undefined) instance.viewerToken = viewerToken;
  return instance;
}
