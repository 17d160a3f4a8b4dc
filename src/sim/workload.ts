// Workloads the simulator can replay: the embedded scenario (generated) or a recorded one — a
// JSON file of NodePools, Deployments and timed scale steps. A workload is a seed function:
// it creates its objects in the in-memory apiserver and returns a driver called every tick.
import type { MemoryKube } from "../kube/memory/memory.ts";
import type { Deployment } from "../objects/kube.ts";
import { parseDuration } from "../karpenter/duration.ts";
import { parseResources } from "../karpenter/resources.ts";
import type { NodePool } from "../objects/karpenter.ts";
import { SCENARIO_POOLS, seedScenario, type ScenarioTiming } from "./scenario.ts";

/** Applies the workload's changes due at `now`; `nextAt` (if known) is when the next one is due. */
export type Driver = ((now: number) => Promise<void>) & { nextAt?: () => number | undefined };
export type WorkloadSeed = (kube: MemoryKube, startMs: number) => Promise<Driver>;

export interface ScaleStep {
  /** Offset from the start of the run, ms. */
  atMs: number;
  namespace: string;
  name: string;
  replicas: number;
}

/** A NodePool's template changed (a new image, say): Karpenter replaces its nodes (drift). */
export interface DriftStep {
  /** Offset from the start of the run, ms. */
  atMs: number;
  nodePool: string;
}

/** A Deployment's pod template changed (a new image, say): its pods are replaced (a rollout). */
export interface RolloutStep {
  /** Offset from the start of the run, ms. */
  atMs: number;
  namespace: string;
  name: string;
}

export interface RecordedWorkload {
  nodePools: NodePool[];
  deployments: Deployment[];
  steps: ScaleStep[];
  /** Template changes of the cluster's NodePools, in time order (from its recorded drift). */
  drifts?: DriftStep[];
  /** Rollouts of the Deployments, in time order (from the revisions core recorded). */
  rollouts?: RolloutStep[];
}

/** The annotation a replayed template change sets on the NodePool's template (its hash changes). */
export const DRIFT_ANNOTATION = "wave.sh/whatif-template";
/** The annotation a replayed rollout sets on the Deployment's pod template (a new ReplicaSet). */
export const ROLLOUT_ANNOTATION = "wave.sh/whatif-revision";

export class WorkloadError extends Error {
  constructor(why: string) {
    super(`workload: ${why}`);
    this.name = "WorkloadError";
  }
}

/**
 * The embedded default's scenario paced for replays of an hour or more: one diurnal cycle per
 * hour, the batch job on/off every 10 min, a rollout every 20 min (the dashboard's pacing, a
 * 12 s batch flip, only makes sense with its few-second boots).
 */
export const WHATIF_TIMING: ScenarioTiming = { dayMs: 3_600_000, batchFlipMs: 600_000, rolloutMs: 1_200_000 };

/** The embedded default's scenario (diurnal web tier, rollouts, the batch pool). */
export function generatedWorkload(timing: ScenarioTiming = WHATIF_TIMING): WorkloadSeed {
  return (kube, startMs) => seedScenario(kube, startMs, timing);
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function duration(v: unknown, at: string): number {
  if (typeof v === "number" && Number.isFinite(v) && v >= 0) return v * 1000;
  if (typeof v !== "string") throw new WorkloadError(`${at}: expected a duration like "90s" or "5m"`);
  let ms: number | null;
  try {
    ms = parseDuration(v);
  } catch {
    ms = null;
  }
  if (ms === null || ms < 0) throw new WorkloadError(`${at}: expected a duration like "90s" or "5m"`);
  return ms;
}

/** A container's requests and limits must be Kubernetes quantities: the simulator sums them. */
function checkResources(c: unknown, at: string): void {
  if (!isRecord(c)) throw new WorkloadError(`${at}: expected an object`);
  const res = c.resources;
  if (res === undefined) return;
  if (!isRecord(res)) throw new WorkloadError(`${at}.resources: expected { requests, limits }`);
  for (const part of ["requests", "limits"] as const) {
    const list = res[part];
    if (list === undefined) continue;
    if (!isRecord(list) || Object.values(list).some((q) => typeof q !== "string"))
      throw new WorkloadError(`${at}.resources.${part}: expected quantities as strings, like cpu: "500m"`);
    for (const [name, q] of Object.entries(list as Record<string, string>)) {
      try {
        parseResources({ [name]: q });
      } catch {
        throw new WorkloadError(
          `${at}.resources.${part}.${name}: "${q}" is not a quantity (like 500m, 2, 1Gi)`,
        );
      }
    }
  }
}

/**
 * Validates a recorded workload:
 * { nodePools?: NodePool[], deployments: Deployment[], steps?: [{ at: "5m" | seconds,
 *   deployment: "namespace/name", replicas: n }] }. Without nodePools the scenario's pools apply.
 */
export function parseRecordedWorkload(json: unknown): RecordedWorkload {
  if (!isRecord(json)) throw new WorkloadError("expected a JSON object with deployments and steps");
  for (const k of Object.keys(json))
    if (!["nodePools", "deployments", "steps", "policies"].includes(k))
      throw new WorkloadError(`unknown key "${k}" (expected nodePools, deployments, steps, policies)`);
  const pools = json.nodePools ?? structuredClone(SCENARIO_POOLS);
  if (!Array.isArray(pools)) throw new WorkloadError("nodePools: expected an array");
  const poolNames = new Set<string>();
  pools.forEach((p: unknown, i) => {
    if (!isRecord(p) || !isRecord(p.metadata) || typeof p.metadata.name !== "string")
      throw new WorkloadError(`nodePools[${i}]: needs metadata.name`);
    if (!isRecord(p.spec) || !isRecord(p.spec.template) || !isRecord(p.spec.template.spec))
      throw new WorkloadError(`nodePools[${i}] (${p.metadata.name}): needs spec.template.spec`);
    const reqs = p.spec.template.spec.requirements;
    if (reqs !== undefined && !Array.isArray(reqs))
      throw new WorkloadError(
        `nodePools[${i}] (${p.metadata.name}): spec.template.spec.requirements must be an array`,
      );
    if (poolNames.has(p.metadata.name))
      throw new WorkloadError(`nodePools[${i}]: a second NodePool named ${p.metadata.name}`);
    poolNames.add(p.metadata.name);
  });
  if (!Array.isArray(json.deployments) || json.deployments.length === 0)
    throw new WorkloadError("deployments: expected a non-empty array");
  const names = new Set<string>();
  json.deployments.forEach((d: unknown, i) => {
    const at = `deployments[${i}]`;
    if (!isRecord(d) || !isRecord(d.metadata) || typeof d.metadata.name !== "string")
      throw new WorkloadError(`${at}: needs metadata.name`);
    if (typeof d.metadata.namespace !== "string") throw new WorkloadError(`${at}: needs metadata.namespace`);
    if (!isRecord(d.spec) || !isRecord(d.spec.template) || !isRecord(d.spec.template.spec))
      throw new WorkloadError(`${at}: needs spec.template.spec`);
    if (!Array.isArray(d.spec.template.spec.containers) || d.spec.template.spec.containers.length === 0)
      throw new WorkloadError(`${at}: needs at least one container`);
    d.spec.template.spec.containers.forEach((c: unknown, j) => checkResources(c, `${at}.containers[${j}]`));
    const r = d.spec.replicas;
    if (r !== undefined && (typeof r !== "number" || !Number.isInteger(r) || r < 0))
      throw new WorkloadError(`${at}: spec.replicas must be an integer >= 0`);
    const ref = `${d.metadata.namespace}/${d.metadata.name}`;
    if (names.has(ref)) throw new WorkloadError(`${at}: a second Deployment named ${ref}`);
    names.add(ref);
  });
  const rawSteps = json.steps ?? [];
  if (!Array.isArray(rawSteps)) throw new WorkloadError("steps: expected an array");
  const steps = rawSteps.map((s: unknown, i): ScaleStep => {
    const at = `steps[${i}]`;
    if (!isRecord(s)) throw new WorkloadError(`${at}: expected an object`);
    const ref = s.deployment;
    if (typeof ref !== "string" || !names.has(ref))
      throw new WorkloadError(`${at}: deployment must name one of the deployments as "namespace/name"`);
    const r = s.replicas;
    if (typeof r !== "number" || !Number.isInteger(r) || r < 0)
      throw new WorkloadError(`${at}: replicas must be an integer >= 0`);
    const [namespace = "", name = ""] = ref.split("/");
    return { atMs: duration(s.at, `${at}.at`), namespace, name, replicas: r };
  });
  steps.sort((a, b) => a.atMs - b.atMs);
  return {
    nodePools: pools as NodePool[],
    deployments: json.deployments as Deployment[],
    steps,
  };
}

/** A seed for a recorded workload: create everything, then apply each step when its time comes. */
export function recordedWorkload(w: RecordedWorkload): WorkloadSeed {
  return async (kube, startMs) => {
    const namespaces = new Set(w.deployments.map((d) => d.metadata.namespace ?? "default"));
    for (const ns of namespaces) {
      await kube.create("Namespace", { metadata: { name: ns } }).catch(() => undefined);
    }
    for (const p of w.nodePools) await kube.create("NodePool", structuredClone(p));
    for (const d of w.deployments)
      await kube.create("Deployment", structuredClone(d), { namespace: d.metadata.namespace ?? "default" });
    let next = 0;
    let nextDrift = 0;
    let nextRollout = 0;
    const drifts = w.drifts ?? [];
    const rollouts = w.rollouts ?? [];
    const due = (step: { atMs: number } | undefined, now: number): boolean =>
      (step?.atMs ?? Infinity) <= now - startMs;
    const drive = async (now: number): Promise<void> => {
      while (due(w.steps[next], now)) {
        const s = w.steps[next++];
        if (s)
          await kube.patch(
            "Deployment",
            s.name,
            { spec: { replicas: s.replicas } },
            { namespace: s.namespace },
          );
      }
      while (due(drifts[nextDrift], now)) {
        const d = drifts[nextDrift++];
        if (d)
          await kube
            .patch("NodePool", d.nodePool, {
              spec: { template: { metadata: { annotations: { [DRIFT_ANNOTATION]: String(nextDrift) } } } },
            })
            .catch(() => undefined);
      }
      // After the counts of the same moment: the rollout replaces the pods the Deployment wants then.
      while (due(rollouts[nextRollout], now)) {
        const r = rollouts[nextRollout++];
        if (r)
          await kube
            .patch(
              "Deployment",
              r.name,
              {
                spec: {
                  template: { metadata: { annotations: { [ROLLOUT_ANNOTATION]: String(nextRollout) } } },
                },
              },
              { namespace: r.namespace },
            )
            .catch(() => undefined);
      }
    };
    return Object.assign(drive, {
      nextAt: (): number | undefined => {
        const at = Math.min(
          w.steps[next]?.atMs ?? Infinity,
          drifts[nextDrift]?.atMs ?? Infinity,
          rollouts[nextRollout]?.atMs ?? Infinity,
        );
        return at === Infinity ? undefined : startMs + at;
      },
    });
  };
}
