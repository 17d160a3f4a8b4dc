// The objects the warmup controller creates, as pure builders.
import { createHash } from "node:crypto";
import type { Container, Pod, PodSpec, PriorityClass, Toleration } from "../objects/kube.ts";
import { HOSTNAME_LABEL, NODE_POOL_LABEL, type NodePool } from "../objects/karpenter.ts";
import {
  CREATED_AT_ANNOTATION,
  DEADLINE_ANNOTATION,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  PREPULL_IMAGE_ANNOTATION,
  PREPULL_IMAGE_HASH_LABEL,
  PREPULL_LABEL,
  WARMUP_LABEL,
  WARMUP_POOL_LABEL,
  WARMUP_PRIORITY_CLASS_NAME,
} from "../objects/wave.ts";
import { formatResources, withoutZeros, type Resources } from "../karpenter/resources.ts";

function withoutKey(m: Record<string, string> | undefined, key: string): Record<string, string> {
  return Object.fromEntries(Object.entries(m ?? {}).filter(([k]) => k !== key));
}

export const PAUSE_IMAGE = "registry.k8s.io/pause:3.10";
/** Negative so every normal pod (priority 0) outranks — and preempts — a warmup pod. */
export const WARMUP_PRIORITY = -10;

/** Container fields Wave sets that the shared Container type leaves out. */
interface WaveContainer extends Container {
  imagePullPolicy?: "Always" | "IfNotPresent" | "Never";
  securityContext?: {
    allowPrivilegeEscalation: false;
    capabilities: { drop: ["ALL"] };
    readOnlyRootFilesystem: true;
    runAsNonRoot: true;
  };
  volumeMounts?: { name: string; mountPath: string; readOnly: true }[];
}

/** Fields Wave sets that the shared PodSpec type leaves out. */
interface WavePodSpec extends PodSpec {
  activeDeadlineSeconds?: number;
  automountServiceAccountToken?: boolean;
  enableServiceLinks?: boolean;
  securityContext?: {
    runAsNonRoot: true;
    runAsUser: number;
    runAsGroup: number;
    seccompProfile: { type: "RuntimeDefault" };
  };
  volumes?: { name: string; emptyDir: { sizeLimit: string } }[];
  containers: WaveContainer[];
}

/**
 * What makes Wave's pods pass the `restricted` Pod Security Standard: a non-root user given by
 * number (so the kubelet need not trust the image's USER), the runtime's default seccomp profile,
 * no privilege escalation, no capabilities, a read-only root file system.
 */
const RESTRICTED_POD = (uid: number): NonNullable<WavePodSpec["securityContext"]> => ({
  runAsNonRoot: true,
  runAsUser: uid,
  runAsGroup: uid,
  seccompProfile: { type: "RuntimeDefault" },
});
const RESTRICTED_CONTAINER: NonNullable<WaveContainer["securityContext"]> = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ["ALL"] },
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
};
/** The pause image's own user (65535), and "nobody" for pre-pull containers. */
const PAUSE_UID = 65535;
const NOBODY = 65534;

/**
 * The pre-pull container's command: a path inside an empty volume mounted over it, so no file
 * of the workload's image can be there and nothing from it ever runs (ADR 0009). The kubelet pulls
 * the image first; starting the container then fails, which prepull.ts reads as "pulled".
 */
export const PREPULL_NO_EXEC_DIR = "/.wave-prepull";
export const PREPULL_COMMAND = [`${PREPULL_NO_EXEC_DIR}/nothing-to-run`];

export function warmupPriorityClass(): PriorityClass {
  return {
    apiVersion: "scheduling.k8s.io/v1",
    kind: "PriorityClass",
    metadata: { name: WARMUP_PRIORITY_CLASS_NAME, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
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
    priorityClassName: WARMUP_PRIORITY_CLASS_NAME,
    // The largest pod's own node constraints (arch, zone, …) so the warm node suits it; the pool
    // pin wins over whatever pool it named.
    // A hostname pin names one existing node, not a kind of node: never copied.
    nodeSelector: { ...withoutKey(src.nodeSelector, HOSTNAME_LABEL), [NODE_POOL_LABEL]: pool },
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
    securityContext: RESTRICTED_POD(PAUSE_UID),
    containers: [
      {
        name: "pause",
        image: PAUSE_IMAGE,
        imagePullPolicy: "IfNotPresent",
        resources: { requests },
        securityContext: RESTRICTED_CONTAINER,
      },
    ],
  };
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: warmupPodName(pool, input.now, input.slot),
      namespace: input.namespace,
      labels: { [WARMUP_LABEL]: "true", [WARMUP_POOL_LABEL]: pool, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
      annotations: { [CREATED_AT_ANNOTATION]: created, [DEADLINE_ANNOTATION]: deadline },
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
 * A pod that makes the kubelet pull `image` and then ends, executing nothing from it: its command
 * is PREPULL_COMMAND, a path inside an empty read-only volume, so the container fails to start
 * *after* the pull — the image is on the node, which is all Wave wants (prepull.ts reads the
 * outcome). Restricted Pod Security, no ServiceAccount token, no service links; the warmup
 * namespace's NetworkPolicy denies it all traffic.
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
    securityContext: RESTRICTED_POD(NOBODY),
    volumes: [{ name: "no-exec", emptyDir: { sizeLimit: "1Mi" } }],
    // No requests: the warm node's room is held by the warmup pod, and a BestEffort pod needs none
    // (the kubelet only turns it away under memory pressure).
    containers: [
      {
        name: "pull",
        image: input.image,
        imagePullPolicy: "IfNotPresent",
        command: PREPULL_COMMAND,
        args: [],
        securityContext: RESTRICTED_CONTAINER,
        volumeMounts: [{ name: "no-exec", mountPath: PREPULL_NO_EXEC_DIR, readOnly: true }],
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
        [PREPULL_LABEL]: "true",
        [WARMUP_POOL_LABEL]: input.pool,
        [PREPULL_IMAGE_HASH_LABEL]: imageHash(input.image),
        [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
      },
      annotations: {
        [PREPULL_IMAGE_ANNOTATION]: input.image,
        [CREATED_AT_ANNOTATION]: new Date(input.now).toISOString(),
        [DEADLINE_ANNOTATION]: new Date(input.now + input.deadlineSeconds * 1000).toISOString(),
      },
    },
    spec,
  };
}
