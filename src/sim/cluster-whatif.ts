// What-if on a connected cluster: core's state (NodePools, the pods of each workload) and its
// history (pods per workload over the last hours) become a recorded workload for the simulator,
// replayed under the cluster's current policies and under a candidate. Pure up to `replay`.
import type { NodeOverlay, NodePool } from "../objects/karpenter.ts";
import { CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL } from "../objects/karpenter.ts";
import type { Deployment, Node, NodeSelectorTerm, Pod } from "../objects/kube.ts";
import { isKwokInstanceType } from "../pricing/kwok.ts";
import { DELETION_COST_ANNOTATION } from "../webhook/constants.ts";
import { PREFERRED_WEIGHT } from "../webhook/patch.ts";
import type { SpotPolicy } from "../policy/spot.ts";
import { resolveWorkload } from "../webhook/workload.ts";
import { isDaemonSetPod } from "../karpenter/room.ts";
import { ASSIGNMENT_LABEL, NOTE_ANNOTATION, isWavePod } from "../objects/wave.ts";
import type { CatalogName } from "./catalog.ts";
import {
  cheaperWarmNote,
  podStartError,
  recordedPodStart,
  type RecordedPodStart,
} from "./whatif-podstart.ts";
import {
  candidatePolicy,
  replay,
  type PodStartStats,
  type CadenceSpan,
  type EndPlacement,
  type ReplayPolicy,
  type ReplayResult,
} from "./replay.ts";
import {
  WorkloadError,
  recordedWorkload,
  type RecordedWorkload,
  type RolloutStep,
  type ScaleStep,
} from "./workload.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** The longest history replayed. */
export const MAX_WINDOW_MS = 24 * HOUR;
/** A cluster with less history than this is replayed this long at its current pod counts. */
export const MIN_REPLAY_MS = 20 * MINUTE;
const HOURS_PER_MONTH = 730;
/** Before the window: the starting pods get their nodes (not measured). */
const SETTLE_MS = 10 * MINUTE;
/** After the window: the current pod counts run this long, so "now" is settled, not mid-launch. */
const TAIL_MS = 10 * MINUTE;

/** Pods of one workload (namespace/Kind/name) in one history bucket. */
export interface PodCountSample {
  workload: string;
  ts: number;
  pods: number;
  /**
   * Its newest revision then and that revision's pods (core's WorkloadPodsRow): a new revision is
   * a rollout, and while older revisions still run, the pods beyond it are the rollout's surge.
   */
  revision?: string;
  revisionPods?: number;
}

export interface ClusterWhatifInput {
  nodePools: readonly NodePool[];
  /** Karpenter's NodeOverlays: both replays price their nodes as Karpenter sees them. */
  nodeOverlays?: readonly NodeOverlay[];
  nodes: readonly Node[];
  pods: readonly Pod[];
  /** Pods per workload per history bucket, any order. */
  history: readonly PodCountSample[];
  /**
   * The last pod core saw of each workload, live or not: the template of a workload without a
   * live pod now (a job between runs), which would otherwise not be replayed.
   */
  templates?: readonly Pod[];
  now: number;
  /** How far back to replay (at most 24 h). */
  windowMs: number;
  current: ReplayPolicy;
  /** Changes over the current policy (spot policies by workload, warmup policies by pool). */
  changes: ReplayPolicy;
  /** Per spot node per hour. */
  spotInterruptionRate: number;
  /** Launch → node Ready. */
  bootDelayMs: number;
  /** The same per NodePool, from its recorded launches (the API's `observedPoolBootMs`). */
  poolBootMs?: Readonly<Record<string, number>>;
  /** Per NodePool, a pod's image pull on a node without it (the API's `observedPoolPullMs`). */
  poolPullMs?: Readonly<Record<string, number>>;
  /** The pod starts core saw over the window: the model check's recorded pod start. */
  podStarts?: readonly RecordedPodStart[];
  /**
   * How often the cluster's controllers acted over the window, from its recorded lifecycle (the
   * API's `observedCadence`): the replay ticks no more often. Without it, every second.
   */
  cadence?: readonly CadenceSpan[];
  /**
   * When each NodePool's template changed, from the cluster's recorded drift (the API's
   * `observedTemplateChanges`): the replay changes it then, and the simulator's drift replaces
   * its nodes as Karpenter did.
   */
  templateChanges?: readonly { nodePool: string; at: number }[];
  seed?: number;
  /**
   * What core recorded over the window: per NodePool × capacity type per bucket, the average nodes
   * and cost rate (core's series points). The report sets the current policy's replay beside it.
   */
  recorded?: readonly RecordedPoint[];
}

/** One point of core's per-pool series (src/core/history/series.ts SeriesPoint), as the replay needs it. */
export interface RecordedPoint {
  ts: number;
  resolutionMs: number;
  nodePool: string;
  nodes: number;
  costPerHour: number;
}

/** The cluster as core recorded it over the replayed window: averages over the covered time. */
export interface RecordedWindow {
  /** Time with recorded points (gaps, when the agent was away, are left out). */
  coveredMs: number;
  costPerHour: number;
  pools: Record<string, { nodes: number; costPerHour: number }>;
}

/** How far the current policy's replay is from the recorded window (relative errors, 0.05 = 5 %). */
export interface Fidelity {
  costError: number;
  /** Replayed against recorded pod start (creation → Ready) p50 and p95, without recorded starts none. */
  podStartError?: { p50: number; p95: number };
  /** Per NodePool with recorded nodes: (replayed − recorded average nodes) / recorded. */
  poolNodesError: Record<string, number>;
}

/**
 * Averages of core's recorded series over [from, to): the cluster's cost rate and each pool's
 * nodes and cost rate, over the buckets that have points. Undefined without any.
 */
export function recordedWindow(
  points: readonly RecordedPoint[],
  from: number,
  to: number,
): RecordedWindow | undefined {
  const buckets = new Map<number, number>();
  const pools = new Map<string, { nodeMs: number; usdMs: number }>();
  let usdMs = 0;
  for (const p of points) {
    if (p.ts < from || p.ts >= to) continue;
    buckets.set(p.ts, Math.max(buckets.get(p.ts) ?? 0, p.resolutionMs));
    usdMs += p.costPerHour * p.resolutionMs;
    const m = pools.get(p.nodePool) ?? { nodeMs: 0, usdMs: 0 };
    m.nodeMs += p.nodes * p.resolutionMs;
    m.usdMs += p.costPerHour * p.resolutionMs;
    pools.set(p.nodePool, m);
  }
  let coveredMs = 0;
  for (const w of buckets.values()) coveredMs += w;
  if (coveredMs === 0) return undefined;
  return {
    coveredMs,
    costPerHour: usdMs / coveredMs,
    pools: Object.fromEntries(
      [...pools]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, m]) => [name, { nodes: m.nodeMs / coveredMs, costPerHour: m.usdMs / coveredMs }]),
    ),
  };
}

/** The current policy's replay against the recorded window. */
export function fidelityOf(side: Pick<WhatifSide, "costPerHour" | "pools">, rec: RecordedWindow): Fidelity {
  const rel = (a: number, b: number): number => (b === 0 ? (a === 0 ? 0 : 1) : (a - b) / b);
  const poolNodesError: Record<string, number> = {};
  for (const [name, r] of Object.entries(rec.pools))
    if (r.nodes > 0) poolNodesError[name] = rel(side.pools[name]?.nodes ?? 0, r.nodes);
  return { costError: rel(side.costPerHour, rec.costPerHour), poolNodesError };
}

/** One side of the comparison: the replay's figures over the window (see ReplayResult). */
export interface WhatifSide extends Pick<
  ReplayResult,
  | "costPerHour"
  | "spotShare"
  | "nodeHours"
  | "pools"
  | "timeline"
  | "podStartHistogram"
  | "podStart"
  | "pendingAtEnd"
  | "spotInterruptions"
  | "nodeClaimsCreated"
> {
  policy: ReplayPolicy;
  costPerMonth: number;
  /** As the replay ends, i.e. the cluster now under this policy. */
  now: Omit<ReplayResult["end"], "byDeployment"> & {
    /** Per workload (namespace/Kind/name): pods by capacity type. */
    workloads: Record<string, EndPlacement>;
  };
}

export interface ClusterWhatifReport {
  /** The replayed window of history. */
  from: number;
  to: number;
  /** Buckets of pod-count history the replay followed (0: the current counts only). */
  historyBuckets: number;
  catalog: CatalogName;
  bootDelayMs: number;
  /** Per NodePool: its node boot and image pull as replayed (from the recorded cluster). */
  poolBootMs: Record<string, number>;
  poolPullMs: Record<string, number>;
  spotInterruptionRate: number;
  /** Workloads replayed, and the ones that could not be (no live pod to take a template from). */
  workloads: string[];
  skipped: { workload: string; reason: string }[];
  current: WhatifSide;
  candidate: WhatifSide;
  /**
   * Why a result looks wrong where it might: e.g. a candidate that enables warmup yet starts pods
   * slower (which workloads got slower, how often warm pods were preempted).
   */
  notes: string[];
  /** What core recorded over the window, and how far the current policy's replay is from it. */
  recorded: (RecordedWindow & { podStart?: PodStartStats; fidelity: Fidelity }) | null;
}

/** The request cannot be answered as asked (the API answers 400 with the message). */
export class ClusterWhatifError extends Error {
  override name = "ClusterWhatifError";
  readonly statusCode = 400;
}

/** The catalog of the cluster's nodes: KWOK's types (the rig), else the EC2 one. */
export function catalogOf(nodes: readonly Node[], pools: readonly NodePool[]): CatalogName {
  const types = nodes.map((n) => n.metadata.labels?.[INSTANCE_TYPE_LABEL] ?? "").filter((t) => t !== "");
  if (types.length > 0) return types.some(isKwokInstanceType) ? "kwok" : "aws";
  // No node yet: a pool that names KWOK's labels is on the KWOK provider.
  const kwok = pools.some((p) =>
    (p.spec.template.spec.requirements ?? []).some((r) => r.key.startsWith("karpenter.kwok.sh/")),
  );
  return kwok ? "kwok" : "aws";
}

/** Removes what Wave's webhook added to a pod (capacity-type terms, its labels): the workload's own template. */
export function ownTemplate(pod: Pod): Deployment["spec"]["template"] {
  const spec = structuredClone(pod.spec);
  delete spec.nodeName;
  const labels = Object.fromEntries(
    Object.entries(pod.metadata.labels ?? {}).filter(
      ([k]) => !k.startsWith("wave.sh/") && k !== "pod-template-hash" && k !== "controller-revision-hash",
    ),
  );
  const placed = pod.metadata.labels?.[ASSIGNMENT_LABEL] !== undefined;
  const noted = pod.metadata.annotations?.[NOTE_ANNOTATION] !== undefined;
  const na = spec.affinity?.nodeAffinity;
  if (na && (placed || noted)) {
    const req = na.requiredDuringSchedulingIgnoredDuringExecution;
    if (req && placed) {
      const terms: NodeSelectorTerm[] = req.nodeSelectorTerms
        .map((t) => ({
          ...t,
          matchExpressions: (t.matchExpressions ?? []).filter((e) => e.key !== CAPACITY_TYPE_LABEL),
        }))
        .filter((t) => t.matchExpressions.length > 0 || (t.matchFields ?? []).length > 0);
      if (terms.length > 0) na.requiredDuringSchedulingIgnoredDuringExecution = { nodeSelectorTerms: terms };
      else delete na.requiredDuringSchedulingIgnoredDuringExecution;
    }
    const prefs = (na.preferredDuringSchedulingIgnoredDuringExecution ?? []).filter(
      (p) =>
        !(
          p.weight === PREFERRED_WEIGHT &&
          (p.preference.matchExpressions ?? []).some((e) => e.key === CAPACITY_TYPE_LABEL)
        ),
    );
    if (prefs.length > 0) na.preferredDuringSchedulingIgnoredDuringExecution = prefs;
    else delete na.preferredDuringSchedulingIgnoredDuringExecution;
    if (
      !na.requiredDuringSchedulingIgnoredDuringExecution &&
      !na.preferredDuringSchedulingIgnoredDuringExecution
    )
      delete spec.affinity;
  }
  const annotations = Object.fromEntries(
    Object.entries(pod.metadata.annotations ?? {}).filter(
      ([k]) => !k.startsWith("wave.sh/") && !(placed && k === DELETION_COST_ANNOTATION),
    ),
  );
  return { metadata: { labels, annotations }, spec };
}

type Census = Pick<PodCountSample, "pods" | "revision" | "revisionPods">;

/**
 * A workload rolled between two buckets: its newest revision changed while it had pods (they are
 * replaced). A workload back from no pods with a new revision just starts; rows without a
 * revision (recorded before core kept them) say nothing.
 */
export function isRollout(prev: Census | undefined, now: Census): boolean {
  return (
    prev !== undefined &&
    prev.pods > 0 &&
    prev.revision !== undefined &&
    now.revision !== undefined &&
    now.revision !== prev.revision
  );
}

/**
 * The replicas a workload wanted in a bucket. Its pods, except while older revisions still run (a
 * rollout): those beyond the new revision's may be surge — the replay's own rollout makes its
 * surge — so the count holds at what it wanted before, less what the new revision's pods shrank
 * by since the bucket before (a new ReplicaSet shrinks only when the replicas wanted do), within
 * [the new revision's pods, all pods] (a rollout's new ReplicaSet never runs more than wanted).
 */
export function replicasOf(c: Census, before: number | undefined, prev?: Census): number {
  if (c.revisionPods === undefined || c.revisionPods >= c.pods || before === undefined) return c.pods;
  const shrunk =
    prev !== undefined && prev.revision === c.revision
      ? Math.max(0, (prev.revisionPods ?? 0) - c.revisionPods)
      : 0;
  return Math.min(c.pods, Math.max(c.revisionPods, before - shrunk));
}

interface Sampled {
  /** namespace/Kind/name → the simulated Deployment ("namespace/name"). */
  simName: Map<string, { namespace: string; name: string }>;
  workload: RecordedWorkload;
  from: number;
  durationMs: number;
  buckets: number;
  skipped: { workload: string; reason: string }[];
}

const DNS = /[^a-z0-9-]/g;

/** The cluster's workloads, their starting counts and their changes over the window. */
export function recordCluster(input: ClusterWhatifInput): Sampled {
  const windowMs = Math.min(MAX_WINDOW_MS, Math.max(MINUTE, input.windowMs));
  const since = input.now - windowMs;
  // A representative pod per workload (the newest live one): the pod template the simulator creates.
  const template = new Map<string, Pod>();
  const current = new Map<string, number>();
  for (const p of input.pods) {
    if (p.metadata.deletionTimestamp || isWavePod(p) || isDaemonSetPod(p)) continue;
    if (p.status?.phase === "Succeeded" || p.status?.phase === "Failed") continue;
    const r = resolveWorkload(p, p.metadata.namespace ?? "default");
    const ref = r.managed ? r.candidates[0] : undefined;
    if (!ref) continue;
    const key = `${ref.namespace}/${ref.kind}/${ref.name}`;
    current.set(key, (current.get(key) ?? 0) + 1);
    const had = template.get(key);
    if (!had || (had.metadata.creationTimestamp ?? "") < (p.metadata.creationTimestamp ?? ""))
      template.set(key, p);
  }
  // A workload with no live pod now takes its template from the last pod core saw of it.
  for (const p of input.templates ?? []) {
    if (isWavePod(p) || isDaemonSetPod(p)) continue;
    const r = resolveWorkload(p, p.metadata.namespace ?? "default");
    const ref = r.managed ? r.candidates[0] : undefined;
    if (!ref) continue;
    const key = `${ref.namespace}/${ref.kind}/${ref.name}`;
    if (!template.has(key)) template.set(key, p);
  }
  const rows = input.history.filter((h) => h.ts >= since && h.ts < input.now).sort((a, b) => a.ts - b.ts);
  const bucketTimes = [...new Set(rows.map((r) => r.ts))].sort((a, b) => a - b);
  const from = bucketTimes[0] ?? input.now;
  const durationMs = Math.max(MIN_REPLAY_MS, input.now - from + TAIL_MS);
  const skipped: { workload: string; reason: string }[] = [];
  const names = new Set([...current.keys(), ...rows.map((r) => r.workload)]);
  const simName = new Map<string, { namespace: string; name: string }>();
  const used = new Set<string>();
  for (const key of [...names].sort()) {
    if (!template.has(key)) {
      skipped.push({ workload: key, reason: "no live pod now to take its pod template from" });
      continue;
    }
    const [namespace = "default", kind = "", name = ""] = key.split("/");
    // Every workload runs as a Deployment in the simulator; a StatefulSet sharing a Deployment's
    // name gets its kind appended.
    let sim = name;
    if (used.has(`${namespace}/${sim}`)) sim = `${name}-${kind.toLowerCase()}`.replace(DNS, "");
    used.add(`${namespace}/${sim}`);
    simName.set(key, { namespace, name: sim });
  }
  // Counts per bucket; a workload without a row in a bucket that has rows had no pods then.
  const byBucket = new Map<number, Map<string, Census>>();
  for (const r of rows) {
    const m = byBucket.get(r.ts) ?? new Map<string, Census>();
    m.set(r.workload, r);
    byBucket.set(r.ts, m);
  }
  const steps: ScaleStep[] = [];
  const rollouts: RolloutStep[] = [];
  const start = new Map<string, number>();
  const last = new Map<string, number>();
  const seen = new Map<string, Census>();
  const track = (at: number, counts: ReadonlyMap<string, Census>): void => {
    for (const [key, sim] of simName) {
      const c = counts.get(key) ?? { pods: 0 };
      const prev = seen.get(key);
      seen.set(key, c);
      const n = replicasOf(c, last.get(key), prev);
      if (!start.has(key)) {
        start.set(key, n);
        last.set(key, n);
        continue;
      }
      if (last.get(key) !== n) {
        steps.push({ atMs: at - from, namespace: sim.namespace, name: sim.name, replicas: n });
        last.set(key, n);
      }
      if (isRollout(prev, c)) rollouts.push({ atMs: at - from, namespace: sim.namespace, name: sim.name });
    }
  };
  for (const ts of bucketTimes) track(ts, byBucket.get(ts) ?? new Map());
  // Then the counts core sees now, which the replay ends with.
  track(Math.max(input.now, from), new Map([...current].map(([k, pods]) => [k, { pods }])));
  const deployments: Deployment[] = [];
  for (const [key, sim] of simName) {
    const pod = template.get(key);
    if (!pod) continue;
    const t = ownTemplate(pod);
    const selector = { "wave.sh/whatif": `${sim.namespace}.${sim.name}`.slice(0, 63) };
    deployments.push({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: sim.name, namespace: sim.namespace },
      spec: {
        replicas: start.get(key) ?? 0,
        selector: { matchLabels: selector },
        template: { ...t, metadata: { ...t.metadata, labels: { ...t.metadata?.labels, ...selector } } },
      },
    });
  }
  const nodePools = input.nodePools.map((p): NodePool => ({
    apiVersion: "karpenter.sh/v1",
    kind: "NodePool",
    metadata: { name: p.metadata.name ?? "", ...(p.metadata.labels ? { labels: p.metadata.labels } : {}) },
    spec: structuredClone(p.spec),
  }));
  const poolNames = new Set(nodePools.map((p) => p.metadata.name ?? ""));
  const drifts = (input.templateChanges ?? [])
    .filter((c) => c.at >= from && poolNames.has(c.nodePool))
    .map((c) => ({ atMs: c.at - from, nodePool: c.nodePool }))
    .sort((a, b) => a.atMs - b.atMs);
  return {
    simName,
    workload: {
      nodePools,
      deployments,
      steps: steps.sort((a, b) => a.atMs - b.atMs),
      ...(drifts.length > 0 ? { drifts } : {}),
      ...(rollouts.length > 0 ? { rollouts: rollouts.sort((a, b) => a.atMs - b.atMs) } : {}),
    },
    from,
    durationMs,
    buckets: bucketTimes.length,
    skipped,
  };
}

/** A policy of the cluster in the simulator's terms: every workload runs as a Deployment. */
function simPolicy(
  p: ReplayPolicy,
  simName: ReadonlyMap<string, { namespace: string; name: string }>,
): ReplayPolicy {
  const spot: SpotPolicy[] = [];
  for (const s of p.spot) {
    const sim = simName.get(`${s.workload.namespace}/${s.workload.kind}/${s.workload.name}`);
    if (sim) spot.push({ ...s, workload: { kind: "Deployment", namespace: sim.namespace, name: sim.name } });
  }
  return { spot, warmup: p.warmup };
}

function side(policy: ReplayPolicy, r: ReplayResult, simName: Sampled["simName"]): WhatifSide {
  const workloads: Record<string, EndPlacement> = {};
  for (const [key, sim] of simName) {
    workloads[key] = r.end.byDeployment[`${sim.namespace}/${sim.name}`] ?? {
      onDemand: 0,
      spot: 0,
      pending: 0,
    };
  }
  return {
    policy,
    costPerHour: r.costPerHour,
    costPerMonth: r.costPerHour * HOURS_PER_MONTH,
    spotShare: r.spotShare,
    nodeHours: r.nodeHours,
    pools: r.pools,
    timeline: r.timeline,
    podStartHistogram: r.podStartHistogram,
    podStart: r.podStart,
    pendingAtEnd: r.pendingAtEnd,
    spotInterruptions: r.spotInterruptions,
    nodeClaimsCreated: r.nodeClaimsCreated,
    now: { costPerHour: r.end.costPerHour, nodes: r.end.nodes, pools: r.end.pools, workloads },
  };
}

/**
 * A candidate that enables warmup but makes the p95 pod start worse says so, with what the replay
 * shows of why: the workloads whose p95 grew most and how often warm pods were preempted.
 */
export function warmupNotes(
  changes: ReplayPolicy,
  now: Pick<ReplayResult, "podStart" | "podStartByDeployment" | "preemptions">,
  cand: Pick<ReplayResult, "podStart" | "podStartByDeployment" | "preemptions">,
  simName: ReadonlyMap<string, { namespace: string; name: string }>,
): string[] {
  const warmed = Object.entries(changes.warmup)
    .filter(([, p]) => p.enabled)
    .map(([pool]) => pool);
  if (warmed.length === 0 || cand.podStart.p95Ms <= now.podStart.p95Ms) return [];
  const s = (ms: number): string => `${Math.round(ms / 1000)} s`;
  const slower: { workload: string; a: number; b: number }[] = [];
  for (const [key, sim] of simName) {
    const a = now.podStartByDeployment[`${sim.namespace}/${sim.name}`]?.p95Ms ?? 0;
    const b = cand.podStartByDeployment[`${sim.namespace}/${sim.name}`]?.p95Ms ?? 0;
    if (b > a) slower.push({ workload: key, a, b });
  }
  slower.sort((x, y) => y.b - y.a - (x.b - x.a));
  return [
    `warmup on ${warmed.join(", ")}: the replay's p95 pod start is worse (${s(now.podStart.p95Ms)} → ` +
      `${s(cand.podStart.p95Ms)}), not better; slower: ` +
      (slower.length > 0
        ? slower
            .slice(0, 3)
            .map((x) => `${x.workload} ${s(x.a)} → ${s(x.b)}`)
            .join(", ")
        : "no single workload") +
      `; warm pods preempted by workload pods ${now.preemptions} → ${cand.preemptions}. ` +
      "Warm nodes take room and launches the other pools' pods would have had; judge before applying.",
  ];
}

/**
 * Checks the changes name something the cluster has: a spot policy for a workload with live pods,
 * a warmup policy for one of its NodePools.
 */
export function checkChanges(
  input: Pick<ClusterWhatifInput, "changes" | "nodePools">,
  workloads: readonly string[],
): void {
  for (const p of input.changes.spot) {
    const key = `${p.workload.namespace}/${p.workload.kind}/${p.workload.name}`;
    if (!workloads.includes(key))
      throw new ClusterWhatifError(
        `spot: the cluster has no live pod of ${p.workload.kind.toLowerCase()}/${p.workload.namespace}/${p.workload.name}` +
          (workloads.length > 0 ? ` (workloads: ${workloads.slice(0, 20).join(", ")})` : " (no workloads)"),
      );
  }
  const pools = input.nodePools.map((p) => p.metadata.name ?? "");
  for (const pool of Object.keys(input.changes.warmup))
    if (!pools.includes(pool))
      throw new ClusterWhatifError(
        `warmup: the cluster has no NodePool ${pool} (NodePools: ${pools.join(", ")})`,
      );
}

/** Which replay of a what-if: the cluster's current policy (0) or the candidate (1). */
export type WhatifHalf = 0 | 1;

/**
 * Runs the candidate's replay elsewhere (core's worker runs it in a second thread, so the two
 * replays take the time of one): the same input and half give the same result wherever they run.
 */
export type ReplayElsewhere = (
  input: ClusterWhatifInput,
  onProgress: (fraction: number) => void,
) => Promise<ReplayResult>;

/** One side's replay of the cluster's window (same seed for both: only the policy differs). */
export async function whatifReplay(
  input: ClusterWhatifInput,
  half: WhatifHalf,
  onProgress?: (fraction: number) => void,
): Promise<ReplayResult> {
  const rec = recordCluster(input);
  const policy = half === 0 ? input.current : candidatePolicy(input.current, input.changes);
  try {
    return await replay({
      ...(onProgress ? { onProgress } : {}),
      workload: recordedWorkload(rec.workload),
      policy: simPolicy(policy, rec.simName),
      durationMs: rec.durationMs,
      catalog: catalogOf(input.nodes, input.nodePools),
      bootDelayMs: input.bootDelayMs,
      ...(input.poolBootMs ? { poolBootMs: input.poolBootMs } : {}),
      ...(input.poolPullMs ? { poolPullMs: input.poolPullMs } : {}),
      spotInterruptionRate: input.spotInterruptionRate,
      seed: input.seed ?? 7,
      startMs: rec.from - SETTLE_MS,
      settleMs: SETTLE_MS,
      quietStepMs: 30_000,
      ...(input.cadence ? { cadence: input.cadence } : {}),
      ...(input.nodeOverlays?.length ? { overlays: input.nodeOverlays } : {}),
    });
  } catch (err) {
    // A NodePool no instance type of the catalog satisfies.
    if (err instanceof WorkloadError) throw new ClusterWhatifError(err.message);
    throw err;
  }
}

/**
 * Replays the cluster's window under its current policy and under the candidate, same seed: one
 * after the other, or both at once when `elsewhere` runs the candidate's (the two are independent).
 */
export async function clusterWhatif(
  input: ClusterWhatifInput,
  onProgress?: (fraction: number) => void,
  elsewhere?: ReplayElsewhere,
): Promise<ClusterWhatifReport> {
  if (input.nodePools.length === 0) throw new ClusterWhatifError("the cluster has no NodePool to simulate");
  const rec = recordCluster(input);
  const workloads = [...rec.simName.keys()];
  checkChanges(input, workloads);
  const catalog = catalogOf(input.nodes, input.nodePools);
  const candidate = candidatePolicy(input.current, input.changes);
  let now: ReplayResult;
  let cand: ReplayResult;
  if (elsewhere) {
    // Progress: the share of both replays' simulated time done.
    const done = [0, 0];
    const tell = (half: WhatifHalf) => (f: number) => {
      done[half] = f;
      onProgress?.(((done[0] ?? 0) + (done[1] ?? 0)) / 2);
    };
    const there = elsewhere(input, tell(1));
    // Settled even if the local replay fails first (no unhandled rejection); its error then wins.
    there.catch(() => undefined);
    now = await whatifReplay(input, 0, tell(0));
    cand = await there;
  } else {
    now = await whatifReplay(input, 0, onProgress ? (f) => onProgress(f / 2) : undefined);
    cand = await whatifReplay(input, 1, onProgress ? (f) => onProgress((1 + f) / 2) : undefined);
  }
  const currentSide = side(input.current, now, rec.simName);
  const notes = [
    ...warmupNotes(input.changes, now, cand, rec.simName),
    ...cheaperWarmNote(input.current, candidate, now, cand),
  ];
  const recorded = input.recorded ? recordedWindow(input.recorded, rec.from, input.now) : undefined;
  const podStart = recordedPodStart(input.podStarts ?? [], rec.from, input.now);
  return {
    from: rec.from,
    to: Math.max(input.now, rec.from),
    historyBuckets: rec.buckets,
    catalog,
    bootDelayMs: input.bootDelayMs,
    poolBootMs: poolFigures(input.nodePools, input.poolBootMs, input.bootDelayMs),
    poolPullMs: poolFigures(input.nodePools, input.poolPullMs, 0),
    spotInterruptionRate: input.spotInterruptionRate,
    workloads,
    skipped: rec.skipped,
    current: currentSide,
    candidate: side(candidate, cand, rec.simName),
    notes,
    recorded: recorded
      ? {
          ...recorded,
          ...(podStart ? { podStart } : {}),
          fidelity: {
            ...fidelityOf(currentSide, recorded),
            ...(podStart ? { podStartError: podStartError(now.podStart, podStart) } : {}),
          },
        }
      : null,
  };
}

/** A figure per NodePool: its own, else the cluster's. */
function poolFigures(
  pools: readonly NodePool[],
  own: Readonly<Record<string, number>> | undefined,
  fallback: number,
): Record<string, number> {
  return Object.fromEntries(
    pools.map((p) => p.metadata.name ?? "").map((n) => [n, own?.[n] ?? fallback] as const),
  );
}
