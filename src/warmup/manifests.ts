// The objects the warmup controller creates, as pure builders.
import { createHash } from "node:crypto";
import type { Container, Pod, PodSpec, PriorityClass, Toleration } from "../objects/kube.ts";
import { K, type NodePool } from "../objects/karpenter.ts";
import { W } from "../objects/wave.ts";
import { formatResources, withoutZeros, type Resources } from "../karpenter/resources.ts";

const HOSTNAME = "kubernetes.io/hostname";

function withoutKey(m: Record<string, string> | undefined, key: string): Record<string, string> {
  return Object.fromEntries(Object.entries(m ?? {}).filter(([k]) => k !== key));
}

export const PAUSE_IMAGE = "registry.k8s.io/pause:3.10";
/** Negative so every normal pod (priority 0) outranks — and preempts — a warmup pod. */
export const WARMUP_PRIORITY = -10;

/** Fields Wave sets that the shared PodSpec type leaves out. */
interface WavePodSpec extends PodSpec {
  activeDeadlineSeconds?: number;
  automountServiceAccountToken?: boolean;
  enableServiceLinks?: boolean;
  containers: (Container & { imagePullPolicy?: "Always" | "IfNotPresent" | "Never" })[];
}

export function warmupPriorityClass(): PriorityClass {
  return {
    apiVersion: "scheduling.k8s.io/v1",
    kind: "PriorityClass",
    metadata: { name: W.priorityClassName, labels: { [W.managedByLabel]: W.managedByValue } },
    value: WARMUP_PRIORITY,
    // Never: a warmup pod must not evict anything to get its node, only ask Karpenter for one.
    preemptionPolicy: "Never",
    globalDefault: false,
    description: "Wave warm-capacity placeholders; any real pod preempts them.",
  };
}

/** Tolerations for exactly the pool's taints, so the pod lands on that pool's nodes. */
export function tolerationsFor(pool: NodePool): Toleration[] {
  return (pool.spec.template.spec.taints ?? []).map((t) =>
    t.value === undefined || t.value === ""
      ? { key: t.key, operator: "Exists", effect: t.effect }
      : { key: t.key, operator: "Equal", value: t.value, effect: t.effect },
  );
}

export interface WarmupPodInput {
  pool: NodePool;
  namespace: string;
  /** The largest pod of the pool: its requests are reserved, its node constraints copied. */
  largest: Pod;
  requests: Resources;
  now: number;
  ttlSeconds: number;
  /** Warm slot number (live warmup pods of the pool), so two slots never share a name. */
  slot: number;
}

/** DNS-1123-safe, unique per pool, creation millisecond and slot. */
export function warmupPodName(pool: string, now: number, slot = 0): string {
  const suffix = `${now.toString(36)}-${slot}`;
  return `wave-warmup-${pool}`.slice(0, 62 - suffix.length).replace(/-+$/, "") + `-${suffix}`;
}

export function warmupPod(input: WarmupPodInput): Pod {
  const pool = input.pool.metadata.name ?? "";
  const created = new Date(input.now).toISOString();
  const deadline = new Date(input.now + input.ttlSeconds * 1000).toISOString();
  const src = input.largest.spec;
  const { pods: _pods, ...reserve } = withoutZeros(input.requests);
  const requests = formatResources(reserve);
  const spec: WavePodSpec = {
    priorityClassName: W.priorityClassName,
    // The largest pod's own node constraints (arch, zone, …) so the warm node suits it; the pool
    // pin wins over whatever pool it named.
    // A hostname pin names one existing node, not a kind of node: never copied.
    nodeSelector: { ...withoutKey(src.nodeSelector, HOSTNAME), [K.nodePoolLabel]: pool },
    ...(src.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
      ? {
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution:
                src.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution,
            },
          },
        }
      : {}),
    tolerations: tolerationsFor(input.pool),
    terminationGracePeriodSeconds: 0,
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    containers: [
      { name: "pause", image: PAUSE_IMAGE, imagePullPolicy: "IfNotPresent", resources: { requests } },
    ],
  };
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: warmupPodName(pool, input.now, input.slot),
      namespace: input.namespace,
      labels: { [W.warmupLabel]: "true", [W.poolLabel]: pool, [W.managedByLabel]: W.managedByValue },
      annotations: { [W.createdAt]: created, [W.deadline]: deadline },
    },
    spec,
  };
}

export const imageHash = (image: string): string =>
  createHash("sha256").update(image).digest("hex").slice(0, 16);

/** One name per (node, image): creating it twice is a harmless 409. */
export function prepullPodName(node: string, image: string): string {
  return `wave-prepull-${createHash("sha256").update(`${node}\n${image}`).digest("hex").slice(0, 20)}`;
}

export interface PrepullPodInput {
  pool: string;
  node: string;
  image: string;
  namespace: string;
  now: number;
  deadlineSeconds: number;
}

/**
 * A pod that makes the kubelet pull `image` and then ends. The container overrides the image's
 * entrypoint with `/bin/sh -c true`, so no workload code ever runs. Images without a shell
 * (distroless, scratch) fail at container start *after* the pull: the image is on the node
 * either way, which is all Wave wants (see prepull.ts for how outcomes are read).
 */
export function prepullPod(input: PrepullPodInput): Pod {
  const spec: WavePodSpec = {
    nodeName: input.node,
    restartPolicy: "Never",
    // The kubelet itself kills a stuck pull at the deadline, even if Wave is down.
    activeDeadlineSeconds: input.deadlineSeconds,
    // Bound by name (no scheduler): tolerate whatever taints the warm node carries.
    tolerations: [{ operator: "Exists" }],
    terminationGracePeriodSeconds: 0,
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    // No requests: the warm node's room is held by the warmup pod, and a BestEffort pod needs none
    // (the kubelet only turns it away under memory pressure).
    containers: [
      {
        name: "pull",
        image: input.image,
        imagePullPolicy: "IfNotPresent",
        command: ["/bin/sh", "-c", "true"],
      },
    ],
  };
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: prepullPodName(input.node, input.image),
      namespace: input.namespace,
      labels: {
        [W.prepullLabel]: "true",
        [W.poolLabel]: input.pool,
        [W.imageHashLabel]: imageHash(input.image),
        [W.managedByLabel]: W.managedByValue,
      },
      annotations: {
        [W.image]: input.image,
        [W.createdAt]: new Date(input.now).toISOString(),
        [W.deadline]: new Date(input.now + input.deadlineSeconds * 1000).toISOString(),
      },
    },
    spec,
  };
}
