// The embedded default's workloads: several NodePools (general, spot-heavy, GPU), a diurnal
// web tier, rollouts, a deployment under a spot policy, and one misconfigured pool whose
// oscillating batch job makes Karpenter thrash — so every dashboard panel has something real.
import type { MemoryKube } from "../kube/memory/memory.ts";
import type { Deployment, PodSpec } from "../objects/kube.ts";
import type { NodePool } from "../objects/karpenter.ts";

const nodeClassRef = { group: "karpenter.k8s.aws", kind: "EC2NodeClass", name: "default" };

function pool(
  name: string,
  spec: Partial<NodePool["spec"]> & {
    requirements: NonNullable<NodePool["spec"]["template"]["spec"]["requirements"]>;
    taints?: NodePool["spec"]["template"]["spec"]["taints"];
  },
): NodePool {
  const { requirements, taints, ...rest } = spec;
  return {
    apiVersion: "karpenter.sh/v1",
    kind: "NodePool",
    metadata: { name },
    spec: {
      template: { spec: { requirements, nodeClassRef, ...(taints ? { taints } : {}), expireAfter: "720h" } },
      disruption: {
        consolidationPolicy: "WhenEmptyOrUnderutilized",
        consolidateAfter: "30s",
        budgets: [{ nodes: "10%" }],
      },
      ...rest,
    },
  };
}

export const SCENARIO_POOLS: NodePool[] = [
  pool("general", {
    requirements: [
      { key: "karpenter.sh/capacity-type", operator: "In", values: ["spot", "on-demand"] },
      { key: "karpenter.k8s.aws/instance-category", operator: "In", values: ["c", "m", "r"] },
      { key: "kubernetes.io/arch", operator: "In", values: ["amd64"] },
    ],
    limits: { cpu: "200", memory: "800Gi" },
    weight: 10,
  }),
  pool("spot-heavy", {
    requirements: [
      { key: "karpenter.sh/capacity-type", operator: "In", values: ["spot"] },
      { key: "karpenter.k8s.aws/instance-category", operator: "In", values: ["c", "m"] },
    ],
    limits: { cpu: "100" },
  }),
  pool("gpu", {
    requirements: [
      { key: "karpenter.sh/capacity-type", operator: "In", values: ["on-demand"] },
      { key: "karpenter.k8s.aws/instance-family", operator: "In", values: ["g5"] },
    ],
    taints: [{ key: "nvidia.com/gpu", value: "true", effect: "NoSchedule" }],
    limits: { cpu: "64" },
    disruption: { consolidationPolicy: "WhenEmpty", consolidateAfter: "5m" },
  }),
  // Misconfigured on purpose: consolidateAfter 0s under an oscillating job → thrashing.
  pool("batch", {
    requirements: [
      { key: "karpenter.sh/capacity-type", operator: "In", values: ["spot", "on-demand"] },
      { key: "karpenter.k8s.aws/instance-category", operator: "In", values: ["c"] },
      { key: "kubernetes.io/arch", operator: "In", values: ["amd64"] },
    ],
    disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "0s" },
  }),
];

function deployment(
  ns: string,
  name: string,
  replicas: number,
  spec: Omit<PodSpec, "containers"> & { cpu: string; memory: string; image: string; gpu?: number },
): Deployment {
  const { cpu, memory, image, gpu, ...podSpec } = spec;
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: ns, labels: { app: name } },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
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

export const SCENARIO_DEPLOYMENTS: Deployment[] = [
  deployment("shop", "web", 8, { cpu: "1", memory: "2Gi", image: "ghcr.io/acme/web:1.42.0" }),
  deployment("shop", "api", 10, { cpu: "500m", memory: "1Gi", image: "ghcr.io/acme/api:3.1.7" }),
  deployment("data", "worker", 6, {
    cpu: "2",
    memory: "4Gi",
    image: "ghcr.io/acme/worker:2.0.3",
    nodeSelector: { "karpenter.sh/nodepool": "spot-heavy" },
  }),
  deployment("ml", "inference", 2, {
    cpu: "3",
    memory: "12Gi",
    gpu: 1,
    image: "ghcr.io/acme/inference:0.9.1",
    tolerations: [{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }],
  }),
  deployment("batch", "etl", 0, {
    cpu: "3",
    memory: "4Gi",
    image: "ghcr.io/acme/etl:5.5.0",
    nodeSelector: { "karpenter.sh/nodepool": "batch" },
  }),
];

/** The deployment the scenario puts under a spot policy (first 3 pods on-demand, Prefer). */
export const SCENARIO_SPOT_POLICY = {
  kind: "Deployment",
  namespace: "shop",
  name: "api",
  threshold: 3,
  strategy: "Prefer",
} as const;

export interface ScenarioTiming {
  /** Period of the compressed "day" of the web tier. */
  dayMs: number;
  /** Half-period of the batch job's on/off oscillation. */
  batchFlipMs: number;
  /** Interval between rollouts of the web tier. */
  rolloutMs: number;
}

export const DEFAULT_TIMING: ScenarioTiming = {
  dayMs: 10 * 60_000,
  batchFlipMs: 20_000,
  rolloutMs: 5 * 60_000,
};

/** Creates the scenario's objects; returns a driver that scales them as time goes by. */
export async function seedScenario(
  kube: MemoryKube,
  startMs: number,
  timing: ScenarioTiming = DEFAULT_TIMING,
): Promise<(now: number) => Promise<void>> {
  for (const ns of ["shop", "data", "ml", "batch"])
    await kube.create("Namespace", { metadata: { name: ns } });
  for (const p of SCENARIO_POOLS) await kube.create("NodePool", structuredClone(p));
  for (const d of SCENARIO_DEPLOYMENTS)
    await kube.create("Deployment", structuredClone(d), { namespace: d.metadata.namespace ?? "default" });
  let rollouts = 0;
  return async (now: number) => {
    const t = now - startMs;
    const web = Math.round(8 + 5 * Math.sin((2 * Math.PI * t) / timing.dayMs));
    const etl = Math.floor(t / timing.batchFlipMs) % 2 === 0 ? 6 : 0;
    await kube.patch("Deployment", "web", { spec: { replicas: web } }, { namespace: "shop" });
    await kube.patch("Deployment", "etl", { spec: { replicas: etl } }, { namespace: "batch" });
    const due = Math.floor(t / timing.rolloutMs);
    if (due > rollouts) {
      rollouts = due;
      await kube.patch(
        "Deployment",
        "web",
        { spec: { template: { metadata: { annotations: { "wave.sh/sim-rollout": String(rollouts) } } } } },
        { namespace: "shop" },
      );
    }
  };
}
