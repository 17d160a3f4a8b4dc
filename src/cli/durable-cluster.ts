// The embedded simulated cluster's objects that outlive a restart (issue 43). A real cluster keeps
// its objects itself; the in-memory apiserver would lose them at Ctrl-C, and with them the user's
// work: policies, an applied thrashing fix. The rule: every object is kept in the data dir but
// those the cluster's controllers make from the others and make again on their own (Pods, Nodes,
// NodeClaims, ReplicaSets, Events, Leases). So what a user or Wave wrote — SpotPolicy and
// WarmupPolicy resources with their status, NodePools (a fix applied from the Thrashing page),
// Deployments, PodDisruptionBudgets, Namespaces — comes back as it was left, uid, creation time
// and field owners included; the nodes and pods are launched again by the simulator.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { KINDS, type KindName } from "../kube/kinds.ts";
import type { MemoryKube } from "../kube/memory/memory.ts";
import type { KubeObject } from "../objects/kube.ts";
import type { Clock } from "../shared/clock.ts";
import type { Logger } from "../shared/log.ts";

/** Kinds the simulated controllers own and recreate: not saved. */
export const RUNTIME_KINDS: ReadonlySet<KindName> = new Set<KindName>([
  "Pod",
  "Node",
  "NodeClaim",
  "ReplicaSet",
  "Event",
  "Lease",
]);

/** The kinds saved in the data dir, in an order that restores namespaces before what lives in them. */
export const SAVED_KINDS: readonly KindName[] = (Object.keys(KINDS) as KindName[])
  .filter((k) => !RUNTIME_KINDS.has(k))
  .sort((a, b) => Number(b === "Namespace") - Number(a === "Namespace"));

/** How long a burst of changes is gathered before one write. */
export const SAVE_DEBOUNCE_MS = 2000;

const FORMAT = 1;

export interface SavedCluster {
  format: typeof FORMAT;
  /** The cluster's time when it was written. */
  savedAt: number;
  objects: Partial<Record<KindName, KubeObject[]>>;
}

export const clusterFile = (dataDir: string): string => join(dataDir, "sim-cluster.json");

/** What is saved of the cluster now (resourceVersions dropped: the next run numbers its own). */
export function savedCluster(memory: MemoryKube, savedAt: number): SavedCluster {
  const objects: Partial<Record<KindName, KubeObject[]>> = {};
  for (const kind of SAVED_KINDS) {
    const list = memory.peek(kind).map((o) => {
      const { resourceVersion: _rv, ...metadata } = o.metadata;
      return { ...o, metadata };
    });
    if (list.length > 0) objects[kind] = list;
  }
  return { format: FORMAT, savedAt, objects };
}

/** The saved cluster in `file`, or undefined (none yet; an unreadable one is said and ignored). */
export function readSavedCluster(file: string, log: Logger): SavedCluster | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const raw = JSON.parse(readFileSync(file, "utf8")) as { format?: unknown; objects?: unknown } | null;
    if (raw?.format !== FORMAT || typeof raw.objects !== "object" || raw.objects === null)
      throw new Error(`not a saved cluster of format ${FORMAT}`);
    return raw as unknown as SavedCluster;
  } catch (err) {
    log.warn("the simulated cluster's saved objects are unreadable: starting without them", { file, err });
    return undefined;
  }
}

/** Puts the saved objects into the (empty) in-memory apiserver; returns how many. */
export function restoreCluster(memory: MemoryKube, saved: SavedCluster): number {
  let n = 0;
  for (const kind of SAVED_KINDS)
    for (const o of saved.objects[kind] ?? []) {
      memory.restore(kind, o);
      n++;
    }
  return n;
}

export interface ClusterSaver {
  /** Writes now if anything changed since the last write. */
  flush(): void;
  /** Stops following changes and writes what is left. */
  stop(): void;
}

/**
 * Follows the in-memory apiserver's changes of the saved kinds and writes them to `file`, at
 * most once per `debounceMs` of `clock` (a burst of changes is one write), and on stop. The
 * write goes through a temporary file and a rename: a crash mid-write leaves the last good one.
 */
export function saveClusterOnChange(
  memory: MemoryKube,
  file: string,
  opts: { clock: Clock; clusterClock: Clock; log: Logger; debounceMs?: number },
): ClusterSaver {
  const debounceMs = opts.debounceMs ?? SAVE_DEBOUNCE_MS;
  const ac = new AbortController();
  let dirty = false;
  let scheduled = false;
  let last = "";
  const flush = (): void => {
    if (!dirty) return;
    dirty = false;
    const saved = savedCluster(memory, opts.clusterClock.now());
    const body = JSON.stringify(saved.objects);
    if (body === last) return;
    try {
      const tmp = `${file}.tmp`;
      writeFileSync(tmp, JSON.stringify(saved), { mode: 0o600 });
      renameSync(tmp, file);
      last = body;
    } catch (err) {
      opts.log.warn("could not save the simulated cluster's objects", { file, err });
    }
  };
  const stopObserving = memory.observe((kind) => {
    if (RUNTIME_KINDS.has(kind)) return;
    dirty = true;
    if (scheduled || ac.signal.aborted) return;
    scheduled = true;
    opts.clock.sleep(debounceMs, ac.signal).then(
      () => {
        scheduled = false;
        flush();
      },
      () => undefined,
    );
  });
  return {
    flush,
    stop: () => {
      stopObserving();
      ac.abort();
      flush();
    },
  };
}

/** Forgets the saved cluster (a run that starts from a fresh history starts from a fresh cluster). */
export function forgetSavedCluster(dataDir: string): void {
  rmSync(clusterFile(dataDir), { force: true });
}
