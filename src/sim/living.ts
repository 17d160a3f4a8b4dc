// The embedded default's cluster (`npm start` without a kubeconfig): six NodePools the way an EKS
// team runs them — general on-demand, a spot pool near its limit, GPUs, Graviton, a job pool with
// warmup, and a batch pool misconfigured on purpose — under a day-shaped web tier, cron-like
// bursts, rollouts and an AMI rollout (drift), so every panel of Wave has something real to show
// for hours, not minutes.
// Pure demand curves (`livingDemand`) are separate from the driver that applies them.
import type { MemoryKube } from "../kube/memory/memory.ts";
import type { Deployment, PodDisruptionBudget, PodSpec } from "../objects/kube.ts";
import type { NodePool } from "../objects/karpenter.ts";
import type { SpotPolicy } from "../policy/spot.ts";
import type { WarmupPolicy } from "../policy/warmup.ts";

const MIN = 60_000;
const HOUR = 60 * MIN;
const nodeClassRef = { group: "karpenter.k8s.aws", kind: "EC2NodeClass", name: "default" };
type Requirement = NonNullable<NodePool["spec"]["template"]["spec"]["requirements"]>[number];

const capacity = (...values: string[]): Requirement => ({
  key: "karpenter.sh/capacity-type",
  operator: "In",
  values,
});
const arch = (a: string): Requirement => ({ key: "kubernetes.io/arch", operator: "In", values: [a] });
/** Small and medium sizes only, as most teams pin them: more, smaller nodes. */
const upTo = (vcpu: number): Requirement => ({
  key: "karpenter.k8s.aws/instance-cpu",
  operator: "Lt",
  values: [String(vcpu + 1)],
});

function pool(
  name: string,
  o: {
    requirements: Requirement[];
    taints?: NodePool["spec"]["template"]["spec"]["taints"];
    consolidateAfter: string;
    policy?: "WhenEmpty" | "WhenEmptyOrUnderutilized";
    limits?: Record<string, string>;
    weight?: number;
    budgets?: NonNullable<NodePool["spec"]["disruption"]>["budgets"];
  },
): NodePool {
  return {
    apiVersion: "karpenter.sh/v1",
    kind: "NodePool",
    metadata: { name },
    spec: {
      template: {
        spec: {
          requirements: o.requirements,
          nodeClassRef,
          ...(o.taints ? { taints: o.taints } : {}),
          expireAfter: "720h",
        },
      },
      disruption: {
        consolidationPolicy: o.policy ?? "WhenEmptyOrUnderutilized",
        consolidateAfter: o.consolidateAfter,
        budgets: o.budgets ?? [{ nodes: "10%" }],
      },
      ...(o.limits ? { limits: o.limits } : {}),
      ...(o.weight !== undefined ? { weight: o.weight } : {}),
    },
  };
}

export const LIVING_POOLS: readonly NodePool[] = [
  // On-demand for everything without a spot policy; Wave's warmup keeps a node ready here.
  pool("general", {
    requirements: [
      capacity("on-demand"),
      { key: "karpenter.k8s.aws/instance-category", operator: "In", values: ["c", "m", "r"] },
      arch("amd64"),
      upTo(4),
    ],
    consolidateAfter: "10m",
    limits: { cpu: "400", memory: "1600Gi" },
    weight: 50,
  }),
  // Spot only, with a tight limit: at the daily peak it runs out and Prefer pods fall back.
  pool("spot-heavy", {
    requirements: [
      capacity("spot"),
      { key: "karpenter.k8s.aws/instance-category", operator: "In", values: ["c", "m"] },
      arch("amd64"),
      upTo(4),
    ],
    consolidateAfter: "5m",
    limits: { cpu: "96" },
    weight: 40,
  }),
  pool("gpu", {
    requirements: [
      capacity("on-demand"),
      { key: "karpenter.k8s.aws/instance-family", operator: "In", values: ["g5"] },
      // One GPU per node: a 4-GPU g5.12xlarge would swallow every scoring run without a launch.
      { key: "karpenter.k8s.aws/instance-gpu-count", operator: "In", values: ["1"] },
    ],
    taints: [{ key: "nvidia.com/gpu", value: "true", effect: "NoSchedule" }],
    consolidateAfter: "5m",
    policy: "WhenEmpty",
    limits: { cpu: "96" },
    // The ML team freezes the pool while its morning model refresh runs (09:00–11:00 UTC): no
    // disruption then, so the scoring runs' empty GPU nodes stay until the window ends (issue 34's
    // "budget with a schedule" blocker, with its cost).
    budgets: [{ nodes: "10%" }, { nodes: "0", schedule: "0 9 * * *", duration: "2h" }],
  }),
  // Graviton, spot first; tainted so only arm64-built workloads land here.
  pool("arm64", {
    requirements: [capacity("spot", "on-demand"), arch("arm64"), upTo(8)],
    taints: [{ key: "wave.sh/arch", value: "arm64", effect: "NoSchedule" }],
    consolidateAfter: "5m",
    limits: { cpu: "256" },
  }),
  // The analytics team's export job (on-demand, tainted), with Wave's warmup ahead of its ramp.
  pool("analytics", {
    requirements: [
      capacity("on-demand"),
      { key: "karpenter.k8s.aws/instance-category", operator: "In", values: ["c", "m"] },
      arch("amd64"),
      upTo(4),
    ],
    taints: [{ key: "wave.sh/workload", value: "analytics", effect: "NoSchedule" }],
    consolidateAfter: "5m",
    limits: { cpu: "64" },
  }),
  // Misconfigured on purpose: consolidateAfter 0s under a job that stops and starts every few
  // minutes → Karpenter removes the nodes the moment the job pauses and launches them again.
  pool("batch", {
    requirements: [
      capacity("spot", "on-demand"),
      { key: "karpenter.k8s.aws/instance-category", operator: "In", values: ["c"] },
      arch("amd64"),
      upTo(8),
    ],
    taints: [{ key: "wave.sh/workload", value: "batch", effect: "NoSchedule" }],
    consolidateAfter: "0s",
  }),
];

function deployment(
  ns: string,
  name: string,
  spec: Omit<PodSpec, "containers"> & {
    cpu: string;
    memory: string;
    image: string;
    gpu?: number;
    annotations?: Record<string, string>;
  },
): Deployment {
  const { cpu, memory, image, gpu, annotations, ...podSpec } = spec;
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns, labels: { app: name } },
    spec: {
      replicas: 0,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name }, ...(annotations ? { annotations } : {}) },
        spec: {
          ...podSpec,
          containers: [
            {
              name,
              image,
              resources: { requests: { cpu, memory, ...(gpu ? { "nvidia.com/gpu": String(gpu) } : {}) } },
            },
          ],
        },
      },
    },
  };
}

const onArm = (): Pick<PodSpec, "nodeSelector" | "tolerations"> => ({
  nodeSelector: { "kubernetes.io/arch": "arm64" },
  tolerations: [{ key: "wave.sh/arch", operator: "Equal", value: "arm64", effect: "NoSchedule" }],
});

export const LIVING_DEPLOYMENTS: readonly Deployment[] = [
  deployment("shop", "web", { cpu: "1500m", memory: "3Gi", image: "ghcr.io/acme/web:1.42.0" }),
  deployment("shop", "api", { cpu: "1", memory: "2Gi", image: "ghcr.io/acme/api:3.1.7" }),
  deployment("shop", "checkout", { cpu: "1", memory: "2Gi", image: "ghcr.io/acme/checkout:2.8.1" }),
  // A cron-like export on its own pool: a whole 4-vCPU node per pod, added step by step, so
  // warmup has a next pod to catch (hits) and, once the steps stop, a warm node nobody uses.
  deployment("data", "export", {
    cpu: "3500m",
    memory: "6Gi",
    image: "ghcr.io/acme/export:1.3.2",
    nodeSelector: { "karpenter.sh/nodepool": "analytics" },
    tolerations: [{ key: "wave.sh/workload", operator: "Equal", value: "analytics", effect: "NoSchedule" }],
  }),
  deployment("data", "worker", { cpu: "1500m", memory: "3Gi", image: "ghcr.io/acme/worker:2.0.3" }),
  deployment("data", "ingest", {
    cpu: "1500m",
    memory: "3Gi",
    image: "ghcr.io/acme/ingest:4.2.0",
    ...onArm(),
  }),
  deployment("data", "reports", { cpu: "3", memory: "6Gi", image: "ghcr.io/acme/reports:1.9.4", ...onArm() }),
  deployment("ml", "inference", {
    cpu: "3",
    memory: "12Gi",
    gpu: 1,
    image: "ghcr.io/acme/inference:0.9.1",
    tolerations: [{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }],
    nodeSelector: { "karpenter.sh/nodepool": "gpu" },
  }),
  // Issue 34's blockers, each the way a team really leaves one behind:
  // a ledger whose PDB allows no disruption (minAvailable = replicas) on the general pool,
  deployment("payments", "ledger", { cpu: "500m", memory: "1Gi", image: "ghcr.io/acme/ledger:7.0.2" }),
  // a schema migration that must not be interrupted (karpenter.sh/do-not-disrupt), 40 min every 3 h,
  deployment("data", "migrate", {
    cpu: "1",
    memory: "2Gi",
    image: "ghcr.io/acme/migrate:1.4.0",
    annotations: { "karpenter.sh/do-not-disrupt": "true" },
  }),
  // and an arm64 indexer whose manifest forgot the arm64 pool's toleration: no NodePool can take
  // it (arm64's taint, amd64 elsewhere), 30 min every 4 h.
  deployment("data", "indexer", {
    cpu: "1",
    memory: "2Gi",
    image: "ghcr.io/acme/indexer:0.7.0",
    nodeSelector: { "kubernetes.io/arch": "arm64" },
  }),
  deployment("batch", "etl", {
    cpu: "3",
    memory: "4Gi",
    image: "ghcr.io/acme/etl:5.5.0",
    nodeSelector: { "karpenter.sh/nodepool": "batch" },
    tolerations: [{ key: "wave.sh/workload", operator: "Equal", value: "batch", effect: "NoSchedule" }],
  }),
];

/** PodDisruptionBudgets: the ledger's allows none (minAvailable equals its replicas). */
export const LIVING_PDBS: readonly PodDisruptionBudget[] = [
  {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: { name: "ledger", namespace: "payments" },
    spec: { minAvailable: 2, selector: { matchLabels: { app: "ledger" } } },
  },
];

const ref = (namespace: string, name: string) => ({ kind: "Deployment" as const, namespace, name });

/** Spot placement on three workloads: Prefer, Require, and a percentage above the base. */
export const LIVING_SPOT_POLICIES: readonly SpotPolicy[] = [
  { workload: ref("shop", "api"), threshold: 3, strategy: "Prefer" },
  { workload: ref("shop", "checkout"), threshold: 2, strategy: "Require" },
  { workload: ref("data", "worker"), threshold: 2, strategy: "Prefer", percentAboveBase: 25 },
];

/**
 * A spot policy set during the day on a Deployment that ran without one (issue 28): data/ingest
 * runs on the arm64 pool (spot first, so Karpenter puts it on spot) until `adoptAfterMs` after the
 * cluster starts; then it is given an on-demand baseline of 3. Wave adopts its running pods where
 * they run and moves 3 of them to on-demand, one eviction at a time.
 */
export const LIVING_ADOPTED_POLICY: SpotPolicy = {
  workload: ref("data", "ingest"),
  threshold: 3,
  strategy: "Prefer",
};

/** Warmup on two pools: a node kept ready for the web tier's next step up, and for the export job's. */
export const LIVING_WARMUP: Readonly<Record<string, Partial<WarmupPolicy>>> = {
  // The web tier's pool: while it rises it steps up a pod at a time, often a minute apart, in
  // 40-minute waves. Cooldown 1 min, so a warm node follows each step (300 s let the steps between
  // go cold); TTL 30 min, so the node warmed after a wave's last step waits through the fall for the
  // next wave (10 min: it expired in the fall and its back-off kept the next wave's first steps cold).
  general: { enabled: true, maxWarmNodes: 1, ttlSeconds: 1800, cooldownSeconds: 60, prePull: false },
  // The export job's pool: each step of its ramp takes the warm node (hits); the node warmed once
  // the ramp is over expires unused and backs the pool off — every half hour, whatever the web does.
  // Cooldown under the ramp's 2-min step: the default 300 s let every other step go cold.
  analytics: { enabled: true, maxWarmNodes: 1, ttlSeconds: 300, cooldownSeconds: 60, prePull: false },
};

export interface LivingTiming {
  /** Period of the fast ripple on top of the day's curve (traffic comes in waves). */
  rippleMs: number;
  /** The batch job: runs this long, then pauses as long. */
  etlRunMs: number;
  /** Cron period of the report bursts, and how long each burst runs. */
  reportsEveryMs: number;
  reportsForMs: number;
  /**
   * Rollouts of shop/* (one Deployment at a time, round robin): each rolls once an hour. Every
   * 7 min (each of them 68 times a day) was a third of the day's 11,000 pods and of the start-up.
   */
  rolloutEveryMs: number;
  /** A new AMI for the arm64 pool (its template changes → Karpenter replaces its nodes: drift). */
  amiEveryMs: number;
  /**
   * The export job: every period, one more pod per step for `exportSteps` steps, held at that
   * until `exportForMs` into the period, then none — a pause longer than the pool's
   * consolidateAfter, so the next run needs new nodes again instead of the last run's empty ones.
   */
  exportEveryMs: number;
  exportForMs: number;
  exportStepMs: number;
  exportSteps: number;
  /** When, after the cluster starts, LIVING_ADOPTED_POLICY is set on the running data/ingest. */
  adoptAfterMs: number;
}

export const LIVING_TIMING: LivingTiming = {
  rippleMs: 40 * MIN,
  etlRunMs: 2 * MIN,
  reportsEveryMs: 30 * MIN,
  reportsForMs: 8 * MIN,
  rolloutEveryMs: 20 * MIN,
  amiEveryMs: 90 * MIN,
  // Every 30 min: the 18-minute pause is longer than consolidateAfter (5m) plus the thrashing
  // detector's relaunch window (5 min), so a run's nodes are scaled to zero, not churned: every
  // 20 min (an 8-minute pause) relaunched them 3 min after Karpenter removed them — a real,
  // mild thrash, while the scenario means `batch` to be the one misconfigured pool.
  exportEveryMs: 30 * MIN,
  exportForMs: 12 * MIN,
  exportStepMs: 2 * MIN,
  exportSteps: 6,
  // An hour and five minutes into the cluster's day: in `npm start`'s generated past, and in the
  // last hour of the 2-hour living-cluster test, which checks that it converged.
  adoptAfterMs: 65 * MIN,
};

/**
 * The fast-forward's longest step: a node warmed after a hit is ready four steps later (the warmup
 * controller's pass, then three simulator passes), within the export ramp's step only at 30 s.
 * At 150 s a pod waited 5 min for a node, analytics' warmup TTL: no warm node was hit.
 */
export const LIVING_MAX_STEP_MS = LIVING_TIMING.exportStepMs / 4;

/** 0 at 03:00 UTC, 1 at 15:00 UTC: the day's traffic shape. */
export function dayShare(nowMs: number): number {
  const hour = (nowMs % (24 * HOUR)) / HOUR;
  return (1 - Math.cos((2 * Math.PI * (hour - 3)) / 24)) / 2;
}

/** Replicas of every scaled Deployment at `nowMs` ("ns/name" → replicas). Pure. */
export function livingDemand(nowMs: number, t: LivingTiming = LIVING_TIMING): Record<string, number> {
  const day = dayShare(nowMs);
  const ripple = Math.sin((2 * Math.PI * nowMs) / t.rippleMs);
  const traffic = Math.max(0, Math.min(1, 0.15 + 0.7 * day + 0.15 * ripple));
  const scale = (min: number, max: number): number => Math.round(min + (max - min) * Math.min(1, traffic));
  const etlOn = Math.floor(nowMs / t.etlRunMs) % 2 === 0;
  const reportsOn = nowMs % t.reportsEveryMs < t.reportsForMs;
  // Offline scoring on the GPUs every 30 minutes, on top of the day's inference traffic: more pods
  // than the day curve's drop can free, so each run launches GPU nodes and WhenEmpty removes them.
  const scoring = nowMs % (30 * MIN) < 12 * MIN ? 3 : 0;
  const exportAt = nowMs % t.exportEveryMs;
  const exportPods =
    exportAt >= t.exportForMs ? 0 : Math.min(t.exportSteps, Math.floor(exportAt / t.exportStepMs) + 1);
  return {
    "shop/web": scale(16, 60),
    "shop/api": scale(10, 40),
    "shop/checkout": scale(4, 16),
    "data/export": exportPods,
    "data/worker": scale(8, 30),
    "data/ingest": scale(10, 36),
    "data/reports": reportsOn ? 20 : 0,
    "ml/inference": scale(2, 5) + scoring,
    "batch/etl": etlOn ? 6 : 0,
    "payments/ledger": 2,
    "data/migrate": nowMs % (3 * HOUR) < 40 * MIN ? 1 : 0,
    "data/indexer": nowMs % (4 * HOUR) < 30 * MIN ? 1 : 0,
  };
}

/** Creates the cluster's objects; returns the driver that moves demand as time goes by. */
export async function seedLivingCluster(
  kube: MemoryKube,
  timing: LivingTiming = LIVING_TIMING,
  /** Stores a spot policy as a user would (core's store, then the webhook's set). */
  setSpotPolicy?: (policy: SpotPolicy) => Promise<void>,
): Promise<(now: number) => Promise<void>> {
  // What an earlier run left (restored from the data dir: a user's fix to a NodePool) stays.
  const absent = (
    kind: "Namespace" | "NodePool" | "PodDisruptionBudget" | "Deployment",
    o: { metadata: { name?: string; namespace?: string } },
  ): boolean =>
    !kube
      .peek(kind)
      .some((x) => x.metadata.name === o.metadata.name && x.metadata.namespace === o.metadata.namespace);
  for (const name of ["shop", "data", "ml", "batch", "payments"])
    if (absent("Namespace", { metadata: { name } })) await kube.create("Namespace", { metadata: { name } });
  for (const p of LIVING_POOLS) if (absent("NodePool", p)) await kube.create("NodePool", structuredClone(p));
  for (const b of LIVING_PDBS)
    if (absent("PodDisruptionBudget", b))
      await kube.create("PodDisruptionBudget", structuredClone(b), {
        namespace: b.metadata.namespace ?? "default",
      });
  for (const d of LIVING_DEPLOYMENTS)
    if (absent("Deployment", d))
      await kube.create("Deployment", structuredClone(d), { namespace: d.metadata.namespace ?? "default" });
  const last = new Map<string, number>();
  let rollout: number | undefined;
  let ami: number | undefined;
  const shop = LIVING_DEPLOYMENTS.filter((d) => d.metadata.namespace === "shop");
  let startedAt: number | undefined;
  let adopted = false;
  return async (now: number) => {
    startedAt ??= now;
    if (!adopted && setSpotPolicy && now - startedAt >= timing.adoptAfterMs) {
      adopted = true;
      await setSpotPolicy(LIVING_ADOPTED_POLICY);
    }
    for (const [key, replicas] of Object.entries(livingDemand(now, timing))) {
      if (last.get(key) === replicas) continue;
      const [namespace, name] = key.split("/") as [string, string];
      await kube.patch("Deployment", name, { spec: { replicas } }, { namespace });
      last.set(key, replicas);
    }
    const r = Math.floor(now / timing.rolloutEveryMs);
    if (rollout !== undefined && r !== rollout) {
      const d = shop[r % shop.length] as Deployment;
      await kube.patch(
        "Deployment",
        d.metadata.name ?? "",
        { spec: { template: { metadata: { annotations: { "wave.sh/sim-rollout": String(r) } } } } },
        { namespace: "shop" },
      );
    }
    rollout = r;
    const a = Math.floor(now / timing.amiEveryMs);
    if (ami !== undefined && a !== ami) {
      await kube.patch("NodePool", "arm64", {
        spec: { template: { metadata: { annotations: { "wave.sh/sim-ami": `ami-arm64-${String(a)}` } } } },
      });
    }
    ami = a;
  };
}
